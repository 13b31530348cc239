"""The kernel's `tools` object: `tools.name(...)` and `tools["name"](...)` run the tool on the host.

Runs inside the kernel (see `kernel_side/__init__.py`). `install(fd)` wraps the kernel's end of the
bridge socketpair and returns `(tools, ToolError)`; the host's replies come on a second socket, whose
descriptor is the first message on the first. Frames are a 4-byte big-endian length and a JSON body;
see `runtime/bridge.py` for the host's end.

A call is on the path of every tool use, so it does little: the request formatted around its
arguments' JSON, one `sendall` of header and body, one `recv` that normally brings the whole reply,
taken from that one buffer, and JSON by the C encoder and scanner directly.
"""

import inspect
import itertools
import json
import socket
import struct
import threading

READ_SIZE = 1 << 16  # bytes asked of one recv: an ordinary reply, header and body, comes in at once


def _json_codec():
    """(dumps, loads) for the bridge: compact ASCII JSON, by the C encoder and scanner where there are."""
    try:
        from json.encoder import c_make_encoder, encode_basestring_ascii
    except ImportError:
        c_make_encoder = None
    if c_make_encoder is None:

        def dumps(value):
            return json.dumps(value, separators=(",", ":"))
    else:
        # No cycle check: arguments that hold themselves end in RecursionError rather than ValueError.
        encoder = c_make_encoder(
            None, json.JSONEncoder().default, encode_basestring_ascii, None, ":", ",", False, False, True
        )

        def dumps(value):
            return "".join(encoder(value, 0))

    scan_once = json.JSONDecoder().scan_once

    def loads(data):
        text = data.decode()
        try:
            value, end = scan_once(text, 0)  # the host writes no space around its replies
        except StopIteration:
            return json.loads(text)  # says what is wrong
        if end != len(text):
            return json.loads(text)
        return value

    return dumps, loads


def install(fd, max_frame=None):
    class ToolError(Exception):
        """A tool call failed. The message says what went wrong; fix the call and try again."""

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fd)  # requests go out here
    _, fds, _, _ = socket.recv_fds(sock, 1, 1, getattr(socket, "MSG_CMSG_CLOEXEC", 0))
    replies = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM, fileno=fds[0])  # replies come back here
    lock = threading.Lock()
    ids = itertools.count(1)
    header = struct.Struct("!I")
    unpack_from = header.unpack_from
    dumps, loads = _json_codec()
    unread = [b""]  # bytes read past the last frame taken (a reply to an abandoned call may precede ours)

    def recv_exact(n):
        data = unread[0]
        if len(data) < n:
            chunk = replies.recv(max(n - len(data), READ_SIZE))
            if not chunk:
                raise ToolError("the tool bridge is closed; the episode may have ended")
            data = data + chunk if data else chunk
            if len(data) < n:  # a large reply: the rest into one buffer of its size, and no further
                whole = bytearray(n)
                whole[: len(data)] = data
                view, got = memoryview(whole), len(data)
                while got < n:
                    more = replies.recv_into(view[got:])
                    if not more:
                        raise ToolError("the tool bridge is closed; the episode may have ended")
                    got += more
                view.release()
                unread[0] = b""
                return whole
        unread[0] = data[n:]
        return data[:n]  # all of `data` (no copy) when it held just this

    def request(message, name_json=None):
        """Send one request frame and return its reply's `result` (ToolError for its `error`).

        `message` is the request without its id; or, with `name_json` (a tool's name as JSON), a tool
        call's arguments, framed without building a dict around them.
        """
        __tracebackhide__ = True
        request_id = next(ids)
        if name_json is None:
            message["id"] = request_id
            body = dumps(message).encode()
        else:
            body = f'{{"id":{request_id},"name":{name_json},"arguments":{dumps(message)}}}'.encode()
        if max_frame is not None and len(body) > max_frame:  # the host would refuse it unread
            raise ToolError(
                f"the call's arguments are {len(body)} bytes as JSON, more than the tool bridge carries "
                f"({max_frame}); write a large text into the workspace's files directly"
            )
        with lock:
            sock.sendall(header.pack(len(body)) + body)
            while True:  # skip replies to calls abandoned by an interrupt
                data = unread[0]
                if not data:  # the usual case: one recv brings the whole reply, header and body
                    data = replies.recv(READ_SIZE)
                    if not data:
                        raise ToolError("the tool bridge is closed; the episode may have ended")
                    unread[0] = data
                end = 4 + unpack_from(data)[0] if len(data) >= 4 else -1
                if 0 <= end <= len(data):
                    unread[0] = data[end:]
                    reply = loads(data[4:end])
                else:
                    (length,) = header.unpack(recv_exact(4))
                    reply = loads(recv_exact(length))
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
        signature = inspect.Signature(
            [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD, default=d) for _, n, d in params]
        )
        names = [n for _, n, _ in params]
        known = frozenset(names)
        name = spec["name"]
        name_json = dumps(name)

        def tool(*args, **kwargs):
            __tracebackhide__ = True
            if not args and known.issuperset(kwargs):  # what bind_partial gives, without its cost
                return request(kwargs, name_json)
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
            summary = "\n".join(
                f"  {n}: {(f.__doc__ or '').splitlines()[0] if f.__doc__ else ''}"
                for n, f in sorted(cls._functions.items())
            )
            cls.__doc__ = (Tools.__doc__ or "") + "\nAvailable tools:\n" + summary

    return Tools(), ToolError
