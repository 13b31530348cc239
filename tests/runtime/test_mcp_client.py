"""MCPToolSource against a real external MCP server process (the example notes server), stdio and HTTP."""
import shlex
import socket
import subprocess
import sys
import time

import psutil
import pytest

from progagent_lib.runtime.mcp_client import MCPConnectionError, MCPToolSource

from conftest import REPO

NOTES_SERVER = REPO / "progagent_lib" / "runtime" / "examples" / "notes_server.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited early with code {proc.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise TimeoutError(f"nothing listens on port {port} after {seconds}s")


def notes_processes() -> list[psutil.Process]:
    return [p for p in psutil.Process().children(recursive=True)
            if any("notes_server.py" in part for part in p.cmdline())]


@pytest.fixture(scope="module")
def notes():
    with MCPToolSource([sys.executable, str(NOTES_SERVER)]) as source:
        yield source


def test_lists_the_servers_tools_with_schemas(notes):
    assert {"add_note", "list_notes", "get_note", "word_count", "legacy_lookup"} <= set(notes.tool_specs)
    add = notes.tool_specs["add_note"]
    assert add.description.startswith("Store a note")
    assert add.parameters["required"] == ["text"]
    assert add.parameters["properties"]["tag"]["default"] == "general"
    assert add.openai_schema()["function"]["name"] == "add_note"


def test_calls_return_native_python_values(notes):
    note, is_error = notes.call("add_note", {"text": "buy milk", "tag": "home"})
    assert not is_error and note["text"] == "buy milk" and isinstance(note["id"], int)
    listed, is_error = notes.call("list_notes", {"tag": "home"})
    # the SDK wraps a list return as {"result": [...]}; the bridge hands back the list itself
    assert not is_error and isinstance(listed, list) and note in listed
    assert notes.call("word_count", {"text": "one two three"}) == (3, False)


def test_a_failing_tool_comes_back_flagged_with_its_message(notes):
    message, is_error = notes.call("get_note", {"note_id": 999})
    assert is_error
    assert "no note with id 999" in message


def test_bad_arguments_come_back_flagged(notes):
    message, is_error = notes.call("add_note", {"txt": "typo in the argument name"})
    assert is_error and "text" in message


def test_an_error_payload_without_iserror_is_not_flagged(notes):
    # What `detect` mode exists for: the server reports failure only inside the payload.
    assert notes.call("legacy_lookup", {"key": "beta"}) == ({"error": "key 'beta' not found"}, False)


def test_an_unknown_tool_is_refused_with_the_list_of_tools(notes):
    with pytest.raises(KeyError, match="add_note"):
        notes.call("no_such_tool", {})


def test_close_stops_the_server_process_and_refuses_later_calls():
    already_running = {p.pid for p in notes_processes()}
    source = MCPToolSource([sys.executable, str(NOTES_SERVER)])
    ours = {p.pid for p in notes_processes()} - already_running
    assert ours, "the stdio server should run as a child process"
    source.close()
    source.close()  # idempotent
    assert not ours & {p.pid for p in notes_processes() if p.status() != psutil.STATUS_ZOMBIE}
    with pytest.raises(MCPConnectionError, match="closed"):
        source.call("word_count", {"text": "x"})


def test_a_server_that_dies_gives_a_connection_error_not_a_hang():
    already_running = {p.pid for p in notes_processes()}
    with MCPToolSource([sys.executable, str(NOTES_SERVER)]) as source:
        for process in notes_processes():
            if process.pid not in already_running:
                process.kill()
                process.wait(timeout=10)
        with pytest.raises(MCPConnectionError, match="closed the connection"):
            source.call("word_count", {"text": "x"})


def test_streamable_http_server_by_url():
    port = free_port()
    proc = subprocess.Popen([sys.executable, str(NOTES_SERVER), "--http", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, proc)
        with MCPToolSource(f"http://127.0.0.1:{port}/mcp") as source:
            assert "get_note" in source.tool_specs
            note, is_error = source.call("add_note", {"text": "over http"})
            assert not is_error and source.call("get_note", {"note_id": note["id"]}) == (note, False)
            message, is_error = source.call("get_note", {"note_id": 12345})
            assert is_error and "12345" in message
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_command_that_is_not_a_server_fails_with_a_clear_error():
    with pytest.raises(MCPConnectionError, match="no_such_program_xyz"):
        MCPToolSource("no_such_program_xyz --serve", connect_timeout=20)
    with pytest.raises(MCPConnectionError, match="cannot connect"):
        MCPToolSource([sys.executable, "-c", "import sys; sys.exit(3)"], connect_timeout=20)


def notes_command() -> str:
    return shlex.join([sys.executable, str(NOTES_SERVER)])


def test_external_server_tools_are_callable_in_the_kernel_beside_the_tasks(restock_task):
    from progagent_lib.runtime import PTCRuntime

    env = restock_task.instantiate("v0", 0)
    try:
        with PTCRuntime(env, mcp_servers=[notes_command()]) as runtime:
            r = runtime.execute(
                "note = tools.add_note(text='seen from the kernel', tag='k')\n"
                "print(note['id'], tools.word_count(text='a b c'), tools['list_notes'](tag='k'))\n"
                "print(tools.list_products(page=1)['items'][0]['sku'])\n"
                "print('add_note' in dir(tools))", timeout=60)
            assert r.error is None, r.error
            assert r.output.splitlines() == [
                "1 3 [{'id': 1, 'text': 'seen from the kernel', 'tag': 'k'}]",
                env.call_tool("list_products", {"page": 1})["items"][0]["sku"],
                "True"]
            assert [c.name for c in r.tool_calls][:3] == ["add_note", "word_count", "list_notes"]

            # a failing MCP tool raises ToolError in the program, which can catch it
            r = runtime.execute("try:\n    tools.get_note(note_id=99)\nexcept ToolError as exc:\n    print('caught:', exc)",
                                timeout=60)
            assert r.error is None and "caught:" in r.output and "no note with id 99" in r.output
            r = runtime.execute("tools.get_note(note_id=99)", timeout=60)
            assert r.error is not None and r.error.name == "ToolError" and "no note with id 99" in r.error.message
    finally:
        env.close()


@pytest.mark.parametrize("error_mode, raises_on_flagged, raises_on_payload", [
    ("is_error", True, False), ("off", False, False), ("detect", True, True)])
def test_error_mode_applies_to_mcp_results(tmp_path, error_mode, raises_on_flagged, raises_on_payload):
    from progagent_lib.runtime import PTCRuntime

    with PTCRuntime(None, workspace=tmp_path, error_mode=error_mode, mcp_servers=[notes_command()]) as runtime:
        flagged = runtime.execute("print(repr(tools.get_note(note_id=5)))", timeout=60)
        payload = runtime.execute("print(repr(tools.legacy_lookup(key='beta')))", timeout=60)
        fine = runtime.execute("print(tools.legacy_lookup(key='alpha'))", timeout=60)
    assert (flagged.error is not None) == raises_on_flagged
    assert "no note with id 5" in str(flagged.error or flagged.output)  # off: the error text is an ordinary value
    assert (payload.error is not None) == raises_on_payload
    assert "not found" in str(payload.error or payload.output)
    assert fine.error is None and "'value': 1" in fine.output
