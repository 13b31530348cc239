"""Tool-call parsing: Qwen3 JSON blocks, Qwen3-Coder XML blocks, and malformed blocks as errors."""
from progagent_lib.harness.parsing import ToolCall, format_tool_call_json, parse_tool_calls

TOOLS = [
    {"type": "function", "function": {"name": "list_products", "parameters": {"type": "object", "properties": {
        "page": {"type": "integer"}, "category": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "programmatic_tool_call", "parameters": {"type": "object", "properties": {
        "code": {"type": "string"}}}}},
]


def test_json_blocks_with_reasoning_and_text():
    text = ('Let me look.</think>\n\nI will list two pages.\n<tool_call>\n{"name": "list_products", "arguments": {"page": 1}}\n'
            '</tool_call>\n<tool_call>\n{"name": "list_products", "arguments": "{\\"page\\": 2}"}\n</tool_call>')
    turn = parse_tool_calls(text)
    assert turn.reasoning == "Let me look."
    assert turn.content == "I will list two pages."
    assert [(c.name, c.arguments) for c in turn.tool_calls] == [("list_products", {"page": 1}), ("list_products", {"page": 2})]
    assert turn.errors == []
    assert len({c.id for c in turn.tool_calls}) == 2


def test_xml_block_keeps_code_indentation_and_converts_declared_types():
    code = "for i in range(2):\n    print(i)"
    text = (f"<tool_call>\n<function=programmatic_tool_call>\n<parameter=code>\n{code}\n</parameter>\n</function>\n</tool_call>"
            "<tool_call>\n<function=list_products>\n<parameter=page>\n3\n</parameter>\n<parameter=category>\n42\n</parameter>\n"
            "</function>\n</tool_call>")
    turn = parse_tool_calls(text, TOOLS)
    assert turn.errors == []
    assert turn.tool_calls[0] == ToolCall("programmatic_tool_call", {"code": code}, id="call_0")
    # page is declared integer, category string: "42" stays text
    assert turn.tool_calls[1].arguments == {"page": 3, "category": "42"}


def test_malformed_blocks_become_errors_and_good_ones_survive():
    text = ('<tool_call>{"name": "list_products", "arguments": {"page": 1</tool_call>'
            '<tool_call>{"arguments": {}}</tool_call>'
            '<tool_call>{"name": "list_products", "arguments": [1]}</tool_call>'
            '<tool_call>{"name": "list_products", "arguments": {"page": 2}}</tool_call>'
            '<tool_call>{"name": "list_products"')
    turn = parse_tool_calls(text)
    assert [c.arguments for c in turn.tool_calls] == [{"page": 2}]
    assert len(turn.errors) == 4
    assert "not valid JSON" in turn.errors[0]
    assert '"name"' in turn.errors[1]
    assert "must be a JSON object" in turn.errors[2]
    assert "no closing" in turn.errors[3]


def test_plain_text_has_no_calls_and_round_trip_of_json_form():
    assert parse_tool_calls("All done, the total is 12.00.").tool_calls == []
    call = ToolCall("list_products", {"page": 4, "category": "tea"})
    parsed = parse_tool_calls(format_tool_call_json(call)).tool_calls[0]
    assert (parsed.name, parsed.arguments) == (call.name, call.arguments)


def test_xml_without_function_tag_is_an_error():
    turn = parse_tool_calls("<tool_call><parameter=code>x</parameter></tool_call>")
    assert turn.tool_calls == [] and "<function=NAME>" in turn.errors[0]
