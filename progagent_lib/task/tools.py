"""Tools: the `@tool` decorator, schema derivation and argument validation.

A tool is written once, as a typed method with a Google-style docstring. Its JSON schema (for the
model), its MCP form and its kernel proxy are all derived from that one definition.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Literal, get_args, get_origin


class ToolError(Exception):
    """A tool failed in a way the agent should see (bad argument, missing record, ...).

    The message is what the model reads, so it should say what went wrong and how to fix the call.
    """


class ToolDefinitionError(Exception):
    """A tool's definition cannot be turned into a schema (missing docstring, untyped parameter)."""


_TOOL_MARK = "__progagent_tool__"


def tool(fn: Callable) -> Callable:
    """Mark an `Environment` method as a tool the agent may call."""
    setattr(fn, _TOOL_MARK, True)
    return fn


def is_tool(obj: Any) -> bool:
    return callable(obj) and getattr(obj, _TOOL_MARK, False)


@dataclass(frozen=True)
class ToolSpec:
    """Everything known about one tool, derived from its definition."""

    name: str
    description: str
    parameters: dict  # JSON schema of the arguments object
    signature: inspect.Signature = field(repr=False, compare=False)

    def openai_schema(self) -> dict:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Return|Raises|Yields|Examples?|Notes?):\s*$")
_ARG_LINE = re.compile(r"^(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def parse_google_docstring(doc: str) -> tuple[str, dict[str, str], str]:
    """Split a Google-style docstring into (description, {param: description}, returns)."""
    lines = inspect.cleandoc(doc).splitlines()
    description: list[str] = []
    params: dict[str, str] = {}
    returns: list[str] = []
    section = None
    current = None
    for raw in lines:
        stripped = raw.strip()
        match = _SECTION.match(stripped)
        if match and not raw.startswith((" ", "\t")):
            section = match.group(1)
            current = None
            continue
        if section is None:
            description.append(raw)
        elif section in ("Args", "Arguments", "Parameters"):
            arg = _ARG_LINE.match(stripped)
            indent = len(raw) - len(raw.lstrip())
            if arg and indent <= 4:
                current = arg.group(1).lstrip("*")
                params[current] = arg.group(3).strip()
            elif current and stripped:
                params[current] = (params[current] + " " + stripped).strip()
        elif section in ("Returns", "Return") and stripped:
            returns.append(stripped)
    return "\n".join(description).strip(), params, " ".join(returns)


_PRIMITIVES = {int: "integer", float: "number", str: "string", bool: "boolean"}


def type_to_schema(annotation: Any) -> dict:
    """JSON schema of a Python type annotation (the subset tools use)."""
    if annotation in _PRIMITIVES:
        return {"type": _PRIMITIVES[annotation]}
    if annotation in (dict, typing.Dict):
        return {"type": "object"}
    if annotation in (list, typing.List):
        return {"type": "array"}
    if annotation is Any:
        return {}
    origin = get_origin(annotation)
    args = get_args(annotation)
    if origin is Literal:
        schema = type_to_schema(type(args[0]))
        return {**schema, "enum": list(args)}
    if origin in (list, typing.List, tuple):
        return {"type": "array", "items": type_to_schema(args[0])} if args else {"type": "array"}
    if origin in (dict, typing.Dict):
        return {"type": "object"}
    if origin in (typing.Union, types.UnionType):
        non_null = [a for a in args if a is not type(None)]
        if len(non_null) == 1:
            inner = type_to_schema(non_null[0])
            if type(None) in args and "type" in inner:
                return {**inner, "type": [inner["type"], "null"]}
            return inner
        return {"anyOf": [type_to_schema(a) for a in args]}
    raise ToolDefinitionError(f"unsupported parameter type {annotation!r}")


# Parameters every listing shares, described once: a tool's docstring may leave them out of 'Args:'.
STANDARD_PARAMETERS = {"page": "1-based page number."}


def build_spec(fn: Callable, owner: str = "") -> ToolSpec:
    """Derive a ToolSpec from a tool method; refuse definitions a model could not use."""
    where = f"{owner}.{fn.__name__}" if owner else fn.__name__
    doc = inspect.getdoc(fn)
    if not doc or not doc.strip():
        raise ToolDefinitionError(f"tool {where!r} has no docstring: the model needs a description")
    description, param_docs, returns = parse_google_docstring(doc)
    if not description:
        raise ToolDefinitionError(f"tool {where!r}: the docstring has no description line")
    signature = inspect.signature(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception as exc:
        raise ToolDefinitionError(f"tool {where!r}: cannot resolve type hints ({exc})") from exc
    properties: dict[str, dict] = {}
    required: list[str] = []
    for name, param in signature.parameters.items():
        if name == "self":
            continue
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise ToolDefinitionError(f"tool {where!r}: *args/**kwargs cannot be described to a model")
        if name not in hints:
            raise ToolDefinitionError(f"tool {where!r}: parameter {name!r} has no type annotation")
        if name not in param_docs and name in STANDARD_PARAMETERS:
            param_docs[name] = STANDARD_PARAMETERS[name]
        if name not in param_docs:
            raise ToolDefinitionError(f"tool {where!r}: parameter {name!r} is not described under 'Args:'")
        try:
            schema = type_to_schema(hints[name])
        except ToolDefinitionError as exc:
            raise ToolDefinitionError(f"tool {where!r}: parameter {name!r}: {exc}") from None
        schema["description"] = param_docs[name]
        if param.default is inspect.Parameter.empty:
            required.append(name)
        else:
            schema["default"] = param.default
        properties[name] = schema
    unknown = set(param_docs) - set(properties)
    if unknown:
        raise ToolDefinitionError(f"tool {where!r}: docstring describes unknown parameter(s) {sorted(unknown)}")
    full_description = description + (f"\n\nReturns: {returns}" if returns else "")
    parameters = {"type": "object", "properties": properties, "required": required}
    return ToolSpec(fn.__name__, full_description, parameters, signature)


_JSON_CHECKS: dict[str, Callable[[Any], bool]] = {
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, (list, tuple)),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def validate_arguments(spec: ToolSpec, arguments: dict) -> dict:
    """Check a call's arguments against the schema; raise ToolError with a message a model can act on."""
    if not isinstance(arguments, dict):
        raise ToolError(f"{spec.name}: arguments must be an object of named parameters, got {type(arguments).__name__}")
    props = spec.parameters["properties"]
    unknown = [k for k in arguments if k not in props]
    if unknown:
        raise ToolError(f"{spec.name}: unknown parameter(s) {unknown!r:.300}; expected {sorted(props)}")
    missing = [k for k in spec.parameters["required"] if k not in arguments]
    if missing:
        raise ToolError(f"{spec.name}: missing required parameter(s) {missing}")
    for key, value in arguments.items():
        schema = props[key]
        expected = schema.get("type")
        if expected is None:
            continue
        allowed = expected if isinstance(expected, list) else [expected]
        if not any(_JSON_CHECKS[t](value) for t in allowed):
            raise ToolError(f"{spec.name}: parameter {key!r} must be {' or '.join(allowed)}, got {value!r:.200}")
        if "enum" in schema and value not in schema["enum"]:
            raise ToolError(f"{spec.name}: parameter {key!r} must be one of {schema['enum']}, got {value!r:.200}")
    return arguments
