"""PTCRuntime: a real confined kernel, the real tool bridge, the reference task and tiny inline tasks."""
import re
import sqlite3
import time
from dataclasses import dataclass

import pytest

from progagent_lib import Criterion, Environment, ToolError, tool
from progagent_lib.runtime import KernelPool, PTCRuntime, SandboxUnavailable, run_terminal
from progagent_lib.runtime import sandbox as sandbox_module
from progagent_lib.runtime.bridge import looks_like_error
from progagent_lib.runtime.error_samples import evaluate_detection


class TinyEnv(Environment):
    """A controlled environment: one tool that fails, one that returns an error-shaped payload."""

    @tool
    def echo(self, text: str, times: int = 1) -> dict:
        """Repeat a text.

        Args:
            text: What to repeat.
            times: How many times.
        """
        return {"text": text * times}

    @tool
    def broken(self) -> str:
        """Always fails."""
        raise ToolError("the widget service is down; try again later")

    @tool
    def legacy(self) -> dict:
        """A tool from a server that reports failures as payloads."""
        return {"error": "record 7 is locked"}

    def criteria(self, final_response):
        return [Criterion("answered", bool(final_response))]


def make_tiny_env(tmp_path, name="tiny"):
    root = tmp_path / name
    (root / "workspace").mkdir(parents=True)
    sqlite3.connect(root / "data.db").close()
    return TinyEnv(root / "data.db", root / "workspace")


@pytest.fixture(scope="module")
def rt(episode):
    with PTCRuntime(episode, timeout=20) as runtime:
        yield runtime


def test_output_last_value_and_persistent_variables(rt):
    first = rt.execute("page = tools.list_products(page=1)\nprint('products on page 1:', len(page['items']))\npage['items'][0]['sku']")
    assert first.error is None and not first.timed_out
    assert "products on page 1: 20" in first.output
    assert "'SKU-" in first.output  # the last expression's value
    second = rt.execute("print(page['items'][1]['sku'])")
    assert re.match(r"SKU-\d+", second.output.strip())


def test_tool_calls_are_recorded_with_name_arguments_size_and_time(rt):
    result = rt.execute("s = tools['get_supplier'](supplier_id=1)\nprint(s['name'])")
    assert result.error is None
    [call] = result.tool_calls
    assert call.name == "get_supplier" and call.arguments == {"supplier_id": 1}
    assert call.result_chars > 10 and call.seconds >= 0 and not call.is_error


def test_positional_arguments_and_dir_and_help_list_the_tools(rt):
    result = rt.execute("print(tools.get_supplier(1)['id'])\nprint(dir(tools))\nhelp(tools)")
    assert result.error is None
    assert result.output.splitlines()[0] == "1"
    assert "'list_products'" in result.output and "'create_purchase_order'" in result.output
    assert "Get one supplier's details" in result.output  # docstrings shown by help()


def test_tool_error_is_catchable_and_uncaught_is_reported(rt):
    caught = rt.execute("try:\n    tools.get_supplier(supplier_id=999999)\nexcept ToolError as exc:\n    print('caught:', exc)")
    assert "caught: no supplier with id 999999" in caught.output and caught.error is None
    assert caught.tool_calls[0].is_error
    uncaught = rt.execute("tools.get_supplier(supplier_id=999999)")
    assert uncaught.error.name == "ToolError" and "999999" in uncaught.error.message
    assert "ptc_kernel_side" not in uncaught.error.traceback and "tools_proxy" not in uncaught.error.traceback  # only the program's own frames


def test_unknown_tool_and_bad_arguments_raise_tool_error(rt):
    result = rt.execute("for call in (lambda: tools.no_such_tool(), lambda: tools.get_supplier(supplier_id='x')):\n"
                        "    try:\n        call()\n    except (ToolError, AttributeError) as exc:\n        print(type(exc).__name__, exc)")
    assert "AttributeError no tool named 'no_such_tool'" in result.output
    assert "ToolError get_supplier: parameter 'supplier_id' must be integer" in result.output


def test_timeout_interrupts_and_keeps_state(rt):
    rt.execute("kept = 41")
    slow = rt.execute("import time\nkept += 1\ntime.sleep(60)", timeout=1)
    assert slow.timed_out and not slow.kernel_restarted
    assert "timed out" in slow.observation
    assert rt.execute("print(kept)").output.strip() == "42"


def test_endless_printing_is_cut_with_head_and_tail(rt):
    result = rt.execute("for i in range(100000):\n    print('line', i)", timeout=20)
    assert result.truncated and len(result.output) < rt.max_output_chars + 200
    assert result.output.startswith("line 0\n") and "line 99999" in result.output
    assert "characters of output cut" in result.output


def test_ansi_codes_are_removed(rt):
    assert rt.execute("print('\\x1b[31mred\\x1b[0m plain')").output == "red plain\n"


def test_the_kernel_cannot_import_the_project_nor_read_the_database(rt, episode):
    result = rt.execute(f"import progagent_lib")
    assert result.error is not None
    assert result.error.name in ("PermissionError", "ModuleNotFoundError", "ImportError")
    db = rt.execute(f"open({str(episode.db_path)!r}, 'rb').read(16)")
    assert db.error.name == "FileNotFoundError"  # not in the sandbox's private view at all


def test_writes_land_in_the_episode_workspace(rt, episode):
    result = rt.execute("import os\nos.makedirs('notes', exist_ok=True)\n"
                        "open('notes/kernel.txt', 'w').write('from the kernel')")
    assert result.error is None
    assert (episode.workspace / "notes" / "kernel.txt").read_text() == "from the kernel"
    helper = rt.execute("open('helper_mod.py', 'w').write('ANSWER = 42')\nimport helper_mod\nprint(helper_mod.ANSWER)")
    assert helper.output == "42\n"  # modules written to the workspace are importable


def test_oracle_run_inside_the_kernel_solves_the_task(restock_task, repo):
    """The reference solution, pasted in as a program, drives the real tools to reward 1."""
    env = restock_task.instantiate("v0", 1)
    kit = (repo / "progagent_lib" / "task" / "oracle_kit.py").read_text()
    oracle = (restock_task.root / "oracle.py").read_text().replace("from progagent_lib.task.oracle_kit import read_all, read_files", "")
    try:
        with PTCRuntime(env) as runtime:
            result = runtime.execute(kit + "\n" + oracle + f"\nanswer = solve(tools, **{env.params!r})\nprint(answer)", timeout=60)
            assert result.error is None, result.observation
            assert len(result.tool_calls) > 5
        assert env.verify(result.output.strip()).reward == 1
    finally:
        env.close()


def test_dead_kernel_is_restarted_and_says_state_was_lost(tmp_path):
    env = make_tiny_env(tmp_path)
    with PTCRuntime(env) as runtime:
        runtime.execute("precious = 1")
        died = runtime.execute("import os\nos.kill(os.getpid(), 9)")
        assert died.kernel_restarted and died.error.name == "KernelDied"
        assert "variables" in died.observation and "lost" in died.observation
        after = runtime.execute("print('precious' in globals(), tools.echo(text='ok')['text'])")
        assert after.output.strip() == "False ok" and not after.kernel_restarted
        # Killed between two programs (e.g. by a thread of the first): the next one still runs, on a new kernel.
        runtime.execute("import os, threading, time\nthreading.Thread(target=lambda: (time.sleep(0.3), os._exit(1))).start()")
        time.sleep(1.0)
        fresh = runtime.execute("print(tools.echo(text='again')['text'])")
        assert fresh.kernel_restarted and fresh.error is None and fresh.output == "again\n"


def test_error_modes(tmp_path):
    env = make_tiny_env(tmp_path)
    program = ("for name in ('broken', 'legacy'):\n    try:\n        print(name, 'returned', repr(tools[name]()))\n"
               "    except ToolError as exc:\n        print(name, 'raised', exc)")
    outputs = {}
    for mode in ("is_error", "off", "detect"):
        with PTCRuntime(env, error_mode=mode) as runtime:
            outputs[mode] = runtime.execute(program).output
    assert "broken raised the widget service is down" in outputs["is_error"]
    assert "legacy returned {'error': 'record 7 is locked'}" in outputs["is_error"]
    assert "broken returned 'the widget service is down; try again later'" in outputs["off"]
    assert "broken raised" in outputs["detect"] and "legacy raised record 7 is locked" in outputs["detect"]


@dataclass
class SourceSpec:
    name: str
    description: str
    parameters: dict


class ListSource:
    """A second tool source (the shape MCPToolSource has): a real in-process catalogue."""

    def __init__(self):
        parameters = {"type": "object", "properties": {"city": {"type": "string", "description": "Name."}}, "required": ["city"]}
        self.tool_specs = {"lookup_city": SourceSpec("lookup_city", "Population of a city.", parameters)}
        self.calls = []

    def call(self, name, arguments):
        self.calls.append((name, arguments))
        populations = {"Lyon": 522_000}
        if arguments["city"] not in populations:
            return f"Error: unknown city {arguments['city']}", False  # a server that omits isError
        return {"city": arguments["city"], "population": populations[arguments["city"]]}, False


def test_extra_tool_sources_join_tools_and_error_mode_applies(tmp_path):
    env = make_tiny_env(tmp_path)
    source = ListSource()
    with PTCRuntime(env, error_mode="detect", extra_tool_sources=[source]) as runtime:
        result = runtime.execute("print(tools.lookup_city(city='Lyon')['population'], tools.echo(text='a', times=2)['text'])\n"
                                 "try:\n    tools.lookup_city(city='Atlantis')\nexcept ToolError as exc:\n    print('raised', exc)")
    assert "522000 aa" in result.output and "raised Error: unknown city Atlantis" in result.output
    assert source.calls == [("lookup_city", {"city": "Lyon"}), ("lookup_city", {"city": "Atlantis"})]


def test_error_detection_rates_on_the_labelled_set():
    report = evaluate_detection()
    print(f"detect mode: detection rate {report.detection_rate:.2f}, false-positive rate {report.false_positive_rate:.2f}")
    assert report.detection_rate >= 0.9 and report.false_positive_rate <= 0.05
    assert looks_like_error({"items": [], "error": None}) is None


def test_terminal_runs_confined_in_the_workspace(tmp_path, repo):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "data.csv").write_text("a,b\n1,2\n")
    result = run_terminal(workspace, f"wc -l data.csv; echo made > out.txt; cat {repo / 'pyproject.toml'}; exit 3")
    assert "2 data.csv" in result.output and "No such file or directory" in result.output
    assert result.exit_code == 3 and not result.timed_out
    assert (workspace / "out.txt").read_text() == "made\n"
    slow = run_terminal(workspace, "sleep 30 & sleep 30", timeout=1)
    assert slow.timed_out and slow.exit_code is None


def test_runtime_terminal_shares_the_workspace(rt, episode):
    result = rt.terminal("ls docs | head -3; touch from_terminal.txt")
    assert result.exit_code == 0 and result.output.strip()
    assert (episode.workspace / "from_terminal.txt").exists()


def test_pool_hands_out_fresh_kernels_bound_to_each_workspace(tmp_path):
    with KernelPool(size=1) as pool:
        env_a, env_b = make_tiny_env(tmp_path, "a"), make_tiny_env(tmp_path, "b")
        with PTCRuntime(env_a, pool=pool) as rt_a, PTCRuntime(env_b, pool=pool) as rt_b:
            a = rt_a.execute("import os\nopen('mine.txt', 'w').write('a')\nprint(os.getpid())")
            b = rt_b.execute(f"import os\nprint(os.getpid())\nprint(sorted(os.listdir('.')))\nopen({str(env_a.workspace / 'x.txt')!r}, 'w')")
            assert a.error is None and (env_a.workspace / "mine.txt").read_text() == "a"
            # Two kernels, never shared (each is pid 2 of its own PID namespace: compare their host pids).
            assert rt_a.session.kernel_pid != rt_b.session.kernel_pid and a.output.split()[0] == b.output.split()[0] == "2"
            assert "mine.txt" not in b.output and b.error.name == "FileNotFoundError"
            # Bound through the slot, the kernel still cannot reach its episode's database or folder.
            db = rt_a.execute(f"open({str(env_a.db_path)!r}, 'rb').read(16)")
            assert db.error.name == "FileNotFoundError"
            parent = rt_a.execute(f"import os\nos.listdir({str(env_a.workspace.parent)!r})")
            assert parent.error.name == "FileNotFoundError"
            assert rt_b.execute("print(tools.echo(text='b')['text'])").output == "b\n"
        deadline = time.monotonic() + 60
        while pool.ready < 1 and time.monotonic() < deadline:  # refilled in the background
            time.sleep(0.1)
        assert pool.ready == 1


def test_refuses_to_run_unconfined_silently(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox_module, "_landlock_abi", 3)
    with pytest.raises(SandboxUnavailable, match="unsafe_no_sandbox=True"):
        PTCRuntime(make_tiny_env(tmp_path))


def test_unsafe_no_sandbox_runs_when_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(sandbox_module, "_landlock_abi", 3)
    env = make_tiny_env(tmp_path)
    with PTCRuntime(env, unsafe_no_sandbox=True) as runtime:
        assert runtime.execute("print(tools.echo(text='x', times=3)['text'])").output == "xxx\n"
