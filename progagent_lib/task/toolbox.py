"""`ToolBox`: an environment's tools as plain functions (`tools.name(...)`), the form an oracle and a notebook call."""

from __future__ import annotations

from typing import Any, Callable, Iterator, Mapping

from .tools import ToolError


class ToolBox(Mapping[str, Callable[..., Any]]):
    """`tools.name(...)` and `tools["name"](...)`: the task's tools as plain functions.

    It is also a read-only mapping name -> callable, which is the authors' `tools` dict interface.
    `observe(name, result)`, when given, sees each call's result (e.g. to keep sample observations).
    `env` is an `Environment`, left unannotated: environment.py imports this module, not the other way round.
    """

    def __init__(self, env: Any, observe: Callable[[str, Any], None] | None = None):
        self._env, self._observe = env, observe

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in self._env.tool_specs:
            raise KeyError(f"no tool named {name!r}; available: {sorted(self._env.tool_specs)}")
        env = self._env
        spec = env.tool_specs[name]
        names = [p for p in spec.signature.parameters if p != "self"]

        def call(*args: Any, **kwargs: Any) -> Any:
            # Positional arguments as Python binds them (the kernel's proxy does the same); the
            # environment then validates the named arguments against the schema.
            if len(args) > len(names):
                raise ToolError(
                    f"{name}() takes {len(names)} positional argument(s) ({', '.join(names)}), {len(args)} given"
                )
            arguments = dict(zip(names, args))
            repeated = sorted(set(arguments) & set(kwargs))
            if repeated:
                raise ToolError(f"{name}() got multiple values for {', '.join(repeated)}")
            result = env.call_tool(name, {**arguments, **kwargs})
            if self._observe is not None:
                self._observe(name, result)
            return result

        call.__name__ = name
        call.__doc__ = spec.description
        call.__signature__ = spec.signature.replace(  # type: ignore[attr-defined]  # read by inspect.signature()
            parameters=[p for p in spec.signature.parameters.values() if p.name != "self"]
        )
        return call

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as exc:
            raise AttributeError(str(exc)) from None

    def __iter__(self) -> Iterator[str]:
        return iter(self._env.tool_specs)

    def __len__(self) -> int:
        return len(self._env.tool_specs)

    def __dir__(self) -> list[str]:
        return sorted(self._env.tool_specs)
