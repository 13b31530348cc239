"""Control characters from programs, shells and tools never reach an observation, a reply or a record as themselves.

A program in a live confined kernel, a shell command and a direct task tool each produce the characters a
terminal obeys instead of showing (`\\x9b31m` the 8-bit CSI, `\\r`, `\\b`, U+202E the right-to-left override,
`\\x1b[2J` clear-screen, BEL, NUL, DEL). The model's observation, the MCP reply, the trajectory read back and
the trajectory file's bytes must hold none of them, and must show that something was there (its escape).
"""
import json
import textwrap
import time

import pytest

from progagent_lib.harness import read_jsonl, write_jsonl
from progagent_lib.harness.episode import Episode
from progagent_lib.harness.view import trajectory_html
from progagent_lib.policy import ReplayPolicy
from progagent_lib.runtime import PTCRuntime
from progagent_lib.textsafe import clean_text, clean_value, escape_controls_in_json

# What a terminal obeys; none may survive. (\x1b stands for every escape sequence.)
OBEYED = ["\x9b", "\r", "\b", "\u202e", "\x1b", "\x07", "\x00", "\x7f"]
PAYLOAD = "top\x9b31mred\roverwritten\bback\u202eevil\x1b[2Jcleared\x07\x00\x7fend"
# The same payload as Python source (escapes, no raw control character in the program's text).
PAYLOAD_SOURCE = ascii(PAYLOAD)
SHOWN = ["\\x9b31mred", "\\roverwritten", "\\x08back", "\\u202eevil", "cleared\\x07\\x00\\x7fend"]
CALL = '<tool_call>\n{}\n</tool_call>'


def call(name: str, **arguments) -> str:
    return CALL.format(json.dumps({"name": name, "arguments": arguments}))


def assert_clean(text: str) -> None:
    found = [c for c in OBEYED if c in text]
    assert not found, f"{found} in {text!r}"


def assert_shown(text: str) -> None:
    assert_clean(text)
    assert all(s in text for s in SHOWN) and "[2J" not in text, text


# --- the rules --------------------------------------------------------------------------------------
def test_clean_text_removes_sequences_and_escapes_every_other_control_character():
    assert clean_text("a\tb\nc") == "a\tb\nc"                                   # tab and newline stay
    assert clean_text("one\r\ntwo\rthree") == "one\ntwo\\rthree"                # \r\n is a line end; a lone \r shows
    assert clean_text("\x1b[1;31mred\x1b[0m \x1b]0;title\x07x \x1b(B\x1b[m") == "red x "  # whole 7-bit sequences go
    assert clean_text("\x1b lone") == "\\x1b lone" and clean_text("\x1b7") == "\\x1b7"  # any other ESC shows
    assert clean_text("\x9b2J\x85") == "\\x9b2J\\x85"                             # C1: the 8-bit CSI shows as text
    assert clean_text("\u202ecba\u2066\u200f\u061c") == "\\u202ecba\\u2066\\u200f\\u061c"  # bidirectional controls
    assert clean_text("a\x00b\x08c\x7f") == "a\\x00b\\x08c\\x7f"
    assert clean_text("é ü 中文 \\x9b") == "é ü 中文 \\x9b"                       # text and literal backslashes stay
    assert clean_text(clean_text(PAYLOAD)) == clean_text(PAYLOAD)                # idempotent: escapes are ASCII
    assert clean_text("\x00" * 5000) == "\\x00" * 8 + "[... 4992 more control characters]"  # a run stays short
    assert clean_value({"k\u202e": ["\x9b", ("\r",)], "n": 3}) == {"k\\u202e": ["\\x9b", ("\\r",)], "n": 3}


def test_clean_text_is_cheap_on_large_text():
    big = ("an ordinary line of program output, 0123456789\n" * 2000) + PAYLOAD  # ~100k characters
    started = time.perf_counter()
    for _ in range(20):
        cleaned = clean_text(big)
    assert (time.perf_counter() - started) / 20 < 0.05
    assert_shown(cleaned)


def test_records_escape_what_json_leaves_raw_and_read_back_unchanged():
    line = escape_controls_in_json(json.dumps({"text": PAYLOAD}, ensure_ascii=False))
    assert_clean(line)
    assert "\\u009b" in line and "\\u202e" in line
    assert json.loads(line) == {"text": PAYLOAD}


# --- a live confined kernel and its terminal -------------------------------------------------------------
@pytest.fixture(scope="module")
def rt(episode):
    with PTCRuntime(episode, timeout=30) as runtime:
        yield runtime


def test_a_program_printing_control_characters_gives_a_clean_observation(rt):
    result = rt.execute(f"print({PAYLOAD_SOURCE})\nimport sys\nsys.stderr.write({PAYLOAD_SOURCE} + '\\n')")
    assert result.error is None, result.observation
    assert_shown(result.output)
    assert_shown(result.observation)
    assert result.observation.count("\\u202eevil") == 2  # stdout and stderr alike


def test_an_exception_carrying_control_characters_gives_a_clean_traceback(rt):
    result = rt.execute(f"raise ValueError({PAYLOAD_SOURCE})")
    assert result.error is not None and result.error.name == "ValueError"
    assert_shown(result.error.message)
    for text in (result.error.traceback, result.observation):  # they quote the source line too (escapes, as written)
        assert_clean(text)
        assert "ValueError: top\\x9b31mred" in text and "\\x08back\\u202eevilcleared\\x07" in text


def test_a_program_cannot_flood_past_the_output_bound_by_printing_controls(episode):
    with PTCRuntime(episode, timeout=30, max_output_chars=2000) as runtime:
        result = runtime.execute("print('x\\u202e' * 990)")  # 1981 characters, each \u202e six once escaped
    assert_clean(result.output)
    assert len(result.output) < 2200 and result.truncated


def test_a_terminal_command_printing_control_characters_gives_a_clean_observation(rt):
    # printf's own escapes: U+009B and U+202E as their UTF-8 bytes, then \r, \b, ESC [2J, BEL, DEL
    result = rt.terminal(r"printf 'top\xc2\x9b31mred\roverwritten\bback\xe2\x80\xaeevil\033[2Jcleared\a\177end\n'")
    assert result.exit_code == 0
    assert_clean(result.observation)
    assert all(s in result.output for s in SHOWN[:4]) and "cleared\\x07\\x7fend" in result.output


# --- whole episodes, their records and the MCP replies ---------------------------------------------------
ENVIRONMENT = textwrap.dedent(f'''
    from progagent_lib import Criterion, Environment, tool

    class Env(Environment):
        @tool
        def note(self) -> str:
            """The note left by the previous shift."""
            return {PAYLOAD_SOURCE}

        @tool
        def record(self) -> dict:
            """The record with the note in it."""
            return {{"note": {PAYLOAD_SOURCE}, "count": 1}}

        def criteria(self, final_response):
            return [Criterion("answered", bool(final_response), detail={PAYLOAD_SOURCE})]
''')


@pytest.fixture(scope="module")
def note_task(tmp_path_factory):
    from progagent_lib import load_task

    folder = tmp_path_factory.mktemp("tasks") / "control_chars"
    folder.mkdir()
    files = {"task.toml": 'id = "tmp/control_chars"\ndomain = "tmp"\ntitle = "A tool that returns control characters"\n',
             "prompt.md": "Read the note.", "environment.py": ENVIRONMENT,
             "generator.py": "def generate(ctx):\n    ctx.db.execute('CREATE TABLE t (v)')\n",
             "oracle.py": "def solve(tools):\n    return tools.note()\n"}
    for name, text in files.items():
        (folder / name).write_text(text)
    return load_task(folder)


def play(task, harness, turns):
    with Episode(task, "v0", 0, harness, policy_name="scripted") as episode:
        agent = ReplayPolicy(turns).start_episode(task)
        while not episode.finished:
            episode.add_turn(agent.act(episode.messages, episode.tools))
        return episode.to_trajectory()


def check_record(trajectory, tmp_path):
    """Observations and tool messages are clean; the file holds no raw control character; the model's own
    text reads back exactly as generated; the notebook view shows none either."""
    for c in trajectory.calls:
        assert_clean(c.observation)
    for m in trajectory.messages:
        if m["role"] in ("tool", "user"):
            assert_clean(m["content"])
    path = tmp_path / "runs.jsonl"
    write_jsonl(trajectory, path)
    assert_clean(path.read_bytes().decode("utf-8"))
    back = read_jsonl(path)[0]
    assert back.to_dict() == trajectory.to_dict()
    assert_clean(trajectory_html(back))
    return back


def test_a_ptc_episode_records_no_control_character(restock_task, tmp_path):
    turns = [call("programmatic_tool_call", code=f"print({PAYLOAD_SOURCE})"),
             call("programmatic_tool_call", code=f"raise RuntimeError({PAYLOAD_SOURCE})"),
             call("terminal", command=r"printf 'a\xc2\x9b31m\rb\bc\xe2\x80\xae\033[2J\n'"),
             "The note says: \u202edone"]  # the model's own text, with an override: kept, but escaped on disk
    t = play(restock_task, "ptc", turns)
    assert [c.kind for c in t.calls] == ["program", "program", "terminal"] and t.runtime_errors == 1
    assert_shown(t.calls[0].observation)
    assert "RuntimeError: top\\x9b31mred" in t.calls[1].observation
    assert "a\\x9b31m\\rb\\x08c\\u202e" in t.calls[2].observation
    back = check_record(t, tmp_path)
    assert back.final_answer == "The note says: \u202edone"


def test_a_dtc_tool_result_is_clean_as_text_and_as_json(note_task, tmp_path):
    t = play(note_task, "dtc", [call("note"), call("record"), call("claim_done", action="read")])
    text, record, _ = t.calls
    assert (text.kind, record.kind) == ("task_tool", "task_tool") and not text.is_error
    assert_shown(text.observation)
    # json.dumps escapes C0 itself (\r -> "\\r" in the JSON); C1 and the override it would leave raw
    assert_clean(record.observation)
    assert "\\x9b31m" in record.observation and "\\u202eevil" in record.observation
    check_record(t, tmp_path)


def test_mcp_replies_carry_no_control_character(note_task):
    from progagent_lib.harness.mcp_server import build_server

    with build_server(note_task, scale="v0", seed=0, harness="dtc") as server:
        as_text, as_data = server.call("note", {}), server.call("record", {})
        done = server.call("claim_done", {"action": "read \u202eit"})
    assert_shown(as_text.content[0].text)
    assert_clean(as_data.content[0].text)
    assert as_data.structured_content["note"] == clean_text(PAYLOAD)
    assert_clean(done.content[0].text)  # the verdict's criteria detail quotes the payload
    assert_clean(json.dumps(done.structured_content, ensure_ascii=False))
