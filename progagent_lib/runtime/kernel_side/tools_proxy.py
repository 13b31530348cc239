"""The kernel's `tools` object: `tools.name(...)` and `tools["name"](...)` run the tool on the host.

Runs inside the kernel (see `kernel_side/__init__.py`). `install(fd)` wraps the kernel's end of the
bridge socketpair and returns `(tools, ToolError)`. Frames are a 4-byte big-endian length and a
JSON body; see `runtime/bridge.py` for the host's end.
"""
import inspect
import itertools
import json
import socket
import struct
import threading


def install(fd):
    class ToolError(Exception):
        """A tool call failed. The message says what went wrong; fix the call and try again."""

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)
    lock = threading.Lock()
    ids = itertools.count(1)

    def recv_exact(n):
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                raise ToolError("the tool bridge is closed; the episode may have ended")
            data += chunk
        return data

    def request(message):
        __tracebackhide__ = True
        message["id"] = request_id = next(ids)
        body = json.dumps(message).encode()
        with lock:
            sock.sendall(struct.pack("!I", len(body)) + body)
            while True:  # skip replies to calls abandoned by an interrupt
                (length,) = struct.unpack("!I", recv_exact(4))
                reply = json.loads(recv_exact(length))
                if reply.get("id") == request_id:
                    break
        if "error" in reply:
            raise ToolError(reply["error"])
        return reply["result"]

    def make_tool(spec):
        schema = spec.get("parameters") or {}
        properties = schema.get("properties") or {}
        required = set(schema.get("required") or [])
        params = []
        for pname, pschema in properties.items():
            if not pname.isidentifier():
                continue
            default = inspect.Parameter.empty if pname in required else pschema.get("default", None)
            params.append((pname in required and "default" not in pschema, pname, default))
        params.sort(key=lambda p: not p[0])  # required parameters first
        signature = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d)
                                       for _, n, d in params])
        name = spec["name"]

        def tool(*args, **kwargs):
            __tracebackhide__ = True
            try:
                bound = signature.bind_partial(*args, **kwargs)
                arguments = dict(bound.arguments)
            except TypeError as exc:
                if args:
                    raise ToolError(f"{name}: {exc}") from None
                arguments = dict(kwargs)  # let the host report what is wrong
            return request({"name": name, "arguments": arguments})

        tool.__name__ = tool.__qualname__ = name
        tool.__signature__ = signature
        doc = spec.get("description") or ""
        lines = [f"    {p}: {s.get('description', '')}" for p, s in properties.items()]
        tool.__doc__ = doc + (("\n\nArgs:\n" + "\n".join(lines)) if lines else "")
        return tool

    class Tools:
        """The episode's tools. Call `tools.name(arg=value)` or `tools["name"](arg=value)`.

        Results are plain Python objects; a failing call raises ToolError.
        """

        _functions = {}

        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            if name not in type(self)._functions:
                type(self)._load()
            try:
                return type(self)._functions[name]
            except KeyError:
                raise AttributeError(f"no tool named {name!r}; available: {sorted(type(self)._functions)}") from None

        def __getitem__(self, name):
            try:
                return self.__getattr__(name)
            except AttributeError as exc:
                raise KeyError(str(exc)) from None

        def __contains__(self, name):
            type(self)._load()
            return name in type(self)._functions

        def __iter__(self):
            type(self)._load()
            return iter(sorted(type(self)._functions))

        def __len__(self):
            type(self)._load()
            return len(type(self)._functions)

        def __dir__(self):
            type(self)._load()
            return sorted(type(self)._functions)

        def __repr__(self):
            type(self)._load()
            return f"<tools: {', '.join(sorted(type(self)._functions))}>"

        @classmethod
        def _load(cls):
            if cls._functions:
                return
            for spec in request({"op": "specs"}):
                fn = make_tool(spec)
                cls._functions[spec["name"]] = fn
                setattr(cls, spec["name"], staticmethod(fn))  # so that help(tools) shows every tool
            summary = "\n".join(f"  {n}: {(f.__doc__ or '').splitlines()[0] if f.__doc__ else ''}"
                                for n, f in sorted(cls._functions.items()))
            cls.__doc__ = (Tools.__doc__ or "") + "\nAvailable tools:\n" + summary

    return Tools(), ToolError
