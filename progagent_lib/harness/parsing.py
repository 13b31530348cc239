"""Tool calls out of a model's raw text: Qwen3's JSON blocks, Qwen3-Coder's XML form, JSON lists of calls,
and Llama-3-style bare JSON objects (`{"name": ..., "parameters": {...}}`, optionally after `<|python_tag|>`).

    <tool_call>
    {"name": "list_products", "arguments": {"page": 2}}
    </tool_call>

    <tool_call>
    <function=programmatic_tool_call>
    <parameter=code>
    print(1)
    </parameter>
    </function>
    </tool_call>

A block that cannot be read becomes an entry in `ParsedTurn.errors` (the episode goes on and the model
is told what was wrong); it never raises.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from .turn import ToolCall

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|(?=<tool_call>)|\Z)", re.DOTALL)
_THINK = re.compile(r"^\s*(?:<think>)?(.*?)</think>", re.DOTALL)
_FUNCTION = re.compile(r"<function=([^>\s]+)\s*>(.*?)(?:</function>|\Z)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)\s*>(.*?)(?:</parameter>|(?=<parameter=)|(?=</function>)|\Z)", re.DOTALL)


@dataclass
class ParsedTurn:
    """One model turn split into its parts."""

    content: str  # the text outside tool-call blocks (and outside <think>)
    tool_calls: list[ToolCall] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # one message per malformed block, written for the model
    reasoning: str = ""  # text inside <think>...</think>, if any


def parse_tool_calls(text: str, tools: list[dict] | None = None) -> ParsedTurn:
    """Split raw model text into reasoning, content and tool calls.

    `tools` (the OpenAI schemas the model saw) lets XML parameter values be converted to the declared
    types (`page` -> int); without it, XML values stay strings.
    """
    reasoning = ""
    think = _THINK.match(text)
    if think and "</think>" in text:
        reasoning = think.group(1).strip()
        text = text[think.end() :]
    calls: list[ToolCall] = []
    errors: list[str] = []
    if TOOL_CALL_OPEN not in text:
        bare = _parse_bare_json(text, tools)
        if bare is not None:
            return ParsedTurn(content="", tool_calls=bare, reasoning=reasoning)
    for index, match in enumerate(_BLOCK.finditer(text)):
        body = match.group(1)
        closed = match.group(0).rstrip().endswith(TOOL_CALL_CLOSE)
        where = f"tool call #{index + 1}"
        if not closed:
            errors.append(
                f"{where} has no closing {TOOL_CALL_CLOSE} tag; write each call as "
                f'{TOOL_CALL_OPEN}{{"name": ..., "arguments": {{...}}}}{TOOL_CALL_CLOSE}.'
            )
            continue
        parsed = _parse_xml(body, tools) if body.lstrip().startswith("<") else _parse_json_calls(body)
        if isinstance(parsed, str):
            errors.append(f"{where}: {parsed}")
            continue
        for call in parsed if isinstance(parsed, list) else [parsed]:
            call.id = f"call_{len(calls)}"
            calls.append(call)
    content = _BLOCK.sub("", text).strip()
    return ParsedTurn(content=content, tool_calls=calls, errors=errors, reasoning=reasoning)


def _parse_bare_json(text: str, tools: list[dict] | None) -> list[ToolCall] | None:
    """A whole turn that is one JSON call object or a JSON list of them (Llama-3 style), else None.

    Only taken as calls when every object names a tool the model was offered (when `tools` is given), so a
    plain answer that happens to be JSON stays an answer."""
    body = text.strip().removeprefix("<|python_tag|>").strip()
    if not body.startswith(("{", "[")):
        return None
    try:
        data = json.loads(body)
    except json.JSONDecodeError:
        return None
    items = data if isinstance(data, list) else [data]
    offered = {(s.get("function", s) or {}).get("name") for s in tools} if tools else None
    if not items or not all(
        isinstance(i, dict) and isinstance(i.get("name"), str) and ("arguments" in i or "parameters" in i)
        for i in items
    ):
        return None
    if offered is not None and not all(i["name"] in offered for i in items):
        return None
    calls: list[ToolCall] = []
    for item in items:
        call = _call_from_object(item)
        if isinstance(call, str):
            return None
        call.id = f"call_{len(calls)}"
        calls.append(call)
    return calls


def _parse_json_calls(body: str) -> ToolCall | list[ToolCall] | str:
    try:
        data = json.loads(body)
    except json.JSONDecodeError as exc:
        return (
            f"the block is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno}); expected "
            '{"name": "TOOL", "arguments": {...}}.'
        )
    if isinstance(data, list):
        if not data:
            return "the block holds an empty list of calls."
        calls = []
        for item in data:
            call = _call_from_object(item)
            if isinstance(call, str):
                return call
            calls.append(call)
        return calls
    return _call_from_object(data)


def _call_from_object(data) -> ToolCall | str:
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"]:
        return 'the JSON must be an object with a string "name" and an object "arguments".'
    arguments = data.get("arguments", data.get("parameters", {}))
    if isinstance(arguments, str):  # some models send the arguments as a JSON string
        try:
            arguments = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return f"the arguments of {data['name']!r} are a string that is not a JSON object."
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, dict):
        return f"the arguments of {data['name']!r} must be a JSON object, got {type(arguments).__name__}."
    return ToolCall(name=data["name"], arguments=arguments)


def _parse_xml(body: str, tools: list[dict] | None) -> ToolCall | str:
    function = _FUNCTION.search(body)
    if function is None:
        return "expected <function=NAME> ... </function> inside the block."
    name = function.group(1).strip()
    properties = _properties(tools, name)
    arguments = {}
    for pname, raw in _PARAMETER.findall(function.group(2)):
        # The format puts the value on its own lines; only that framing newline is removed, so code
        # keeps its indentation.
        value = raw[1:] if raw.startswith("\n") else raw
        value = value[:-1] if value.endswith("\n") else value
        arguments[pname.strip()] = _convert(value, properties.get(pname.strip(), {}))
    return ToolCall(name=name, arguments=arguments)


def _properties(tools: list[dict] | None, name: str) -> dict:
    for schema in tools or []:
        fn = schema.get("function", schema)
        if fn.get("name") == name:
            return fn.get("parameters", {}).get("properties", {})
    return {}


def _convert(value: str, schema: dict):
    """An XML parameter value as the type its schema declares; left as text when it does not parse."""
    declared = schema.get("type", "string")
    types = declared if isinstance(declared, list) else [declared]
    if "string" in types or not schema:
        return value
    text = value.strip()
    try:
        if "integer" in types and re.fullmatch(r"[-+]?\d+", text):
            return int(text)
        if "number" in types:
            return float(text) if re.search(r"[.eE]", text) else int(text)
        if "boolean" in types and text.lower() in ("true", "false"):
            return text.lower() == "true"
        if "null" in types and text.lower() in ("null", "none"):
            return None
        if set(types) & {"object", "array"}:
            return json.loads(text)
    except (ValueError, json.JSONDecodeError):
        pass
    return value


def format_tool_call_json(call: ToolCall) -> str:
    """The Qwen3 JSON form of one call (used to render teacher turns as raw text)."""
    return f"{TOOL_CALL_OPEN}\n{json.dumps({'name': call.name, 'arguments': call.arguments}, ensure_ascii=False)}\n{TOOL_CALL_CLOSE}"
