"""The `progagent` front door, run as a user runs it: the real console script (.venv/bin/progagent) in a subprocess.

Every bad argument is one line on stderr with exit status 2 and a close-match suggestion, never a traceback; task ids
are accepted where task paths are; `--version`; `--help` imports no command module's heavy dependencies.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROGAGENT = Path(sys.executable).parent / "progagent"   # the console script pip installed beside this interpreter
HEAVY = ("torch", "transformers", "trl", "polars", "altair", "jupyter_client")


def progagent(*argv: str, cwd: Path = REPO, timeout: float = 300, pool: Path | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "PROGAGENT_TASKS"}   # ids resolve under the repository's tasks/
    if pool is not None:
        env["PROGAGENT_TASKS"] = str(pool)
    return subprocess.run([str(PROGAGENT), *argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def assert_one_line_error(done: subprocess.CompletedProcess, *expected: str) -> str:
    err = done.stderr.strip()
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "\n" not in err and err, done.stderr
    for text in expected:
        assert text in err, err
    return err


BAD_ARGUMENTS = {
    "policy": (["run", "--tasks", "retail/restock_orders", "--policy", "orcale", "--out", "x.jsonl"],
               ["--policy 'orcale': unknown policy", "did you mean oracle?"]),
    "scales": (["run", "--tasks", "retail/restock_orders", "--scales", "v9", "--out", "x.jsonl"],
               ["unknown scale 'v9'", "expected one of v0, v1, v2, v3"]),
    "harness": (["run", "--tasks", "retail/restock_orders", "--harness", "ptc,ptcc", "--out", "x.jsonl"],
                ["unknown harness(es) ['ptcc']", "did you mean ptc?"]),
    "task id": (["run", "--tasks", "retail/restok_orders", "--policy", "oracle", "--out", "x.jsonl"],
                ["'retail/restok_orders': no such task", "did you mean retail/restock_orders"]),
    "task path": (["run", "--tasks", "tasks/retail/restok_orders", "--out", "x.jsonl"],
                  ["did you mean tasks/retail/restock_orders"]),
    "serve task": (["serve", "--task", "retail/restok_orders"], ["did you mean retail/restock_orders"]),
    "serve domain": (["serve", "--task", "retail"], ["holds 3 tasks; name one, e.g. retail/"]),
    "tasks list typo": (["tasks", "list", "tasks/retial"], ["did you mean tasks/retail?"]),
    "tasks list nothing near": (["tasks", "list", "tasks/nope"], ["'tasks/nope': no such task", "domains: "]),
    "tasks certify": (["tasks", "certify", "hr_payrol"], ["did you mean hr_payroll?"]),
    "config file": (["train", "sft", "--config", "configs/cpu-smok.yaml"],
                    ["--config 'configs/cpu-smok.yaml': no such file", "did you mean configs/cpu-smoke.yaml"]),
    "profile": (["reproduce", "--profile", "cpu-smok"], ["unknown profile", "did you mean cpu-smoke"]),
    "command": (["rnu"], ["unknown command 'rnu'", "did you mean run?"]),
    "subcommand": (["tasks", "lst"], ["invalid choice: 'lst'", "did you mean list?"]),
    "export form": (["export", "harbr"], ["did you mean harbor?"]),
    "train needs task id": (["train", "needs", "--task", "retail/restok_orders"],
                            ["--task 'retail/restok_orders'", "did you mean retail/restock_orders"]),
    "bench harness": (["bench", "run", "agentdojo", "--harness", "dtcc"], ["did you mean dtc?"]),
}


@pytest.mark.parametrize("case", list(BAD_ARGUMENTS))
def test_a_bad_argument_is_one_line_with_a_suggestion_and_status_2(case, tmp_path):
    argv, expected = BAD_ARGUMENTS[case]
    assert_one_line_error(progagent(*argv), *expected)


def test_an_existing_folder_without_tasks_is_refused_not_listed_as_nothing(tmp_path):
    (tmp_path / "empty").mkdir()
    assert_one_line_error(progagent("tasks", "list", str(tmp_path / "empty")), "no task (task.toml) under")


def test_a_profile_config_runs_or_refuses_its_stage_in_one_line(tmp_path):
    # `train eval` has no stage of a profile to run: the line names the command that runs its evaluations.
    assert_one_line_error(progagent("train", "eval", "--config", "configs/cpu-smoke.yaml"),
                          "`progagent train pipeline --config configs/cpu-smoke.yaml`")
    # GSPO of a profile starts from the profile's SFT model: without it, the line says what to run first.
    assert_one_line_error(progagent("train", "gspo", "--config", "configs/ci.yaml", "--output-dir", str(tmp_path)),
                          "run `progagent train sft --config configs/ci.yaml` first")


@pytest.mark.slow
def test_train_sft_takes_a_profile_config_and_runs_its_sft_stage(tmp_path):
    """The README's `train sft --config <profile>.yaml`: the profile's SFT stage, where `train pipeline` puts it."""
    done = progagent("train", "sft", "--config", "configs/ci.yaml", "--output-dir", str(tmp_path), timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    summary = json.loads(done.stdout[done.stdout.index("{\n"):])
    assert summary["ptc"]["steps"] == 1
    assert (tmp_path / "sft-ptc" / "final" / "config.json").is_file() and (tmp_path / "teacher.jsonl").is_file()


def test_version_is_the_package_version():
    done = progagent("--version")
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert done.returncode == 0 and done.stdout.strip() == f"progagent {version}"


def test_run_takes_a_task_id_from_any_folder(tmp_path):
    """`retail/restock_orders` is no path from tmp_path: it resolves under the repository's tasks/ (at v0, the default
    scale of every command), and the oracle's episode passes."""
    out = tmp_path / "oracle.jsonl"
    done = progagent("run", "--tasks", "retail/restock_orders", "--policy", "oracle", "--out", str(out), "--no-progress",
                     cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    (trajectory,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert trajectory["task_id"] == "retail/restock_orders" and trajectory["scale"] == "v0"
    assert trajectory["reward"] == 1.0


def test_task_ids_resolve_under_progagent_tasks(tmp_path):
    import shutil

    shutil.copytree(REPO / "tasks" / "retail" / "restock_orders", tmp_path / "pool" / "shop" / "restock",
                    ignore=shutil.ignore_patterns("__pycache__"))
    listed = progagent("tasks", "list", "shop/restock", cwd=tmp_path, pool=tmp_path / "pool")
    assert listed.returncode == 0 and "retail/restock_orders" in listed.stdout   # the id task.toml gives it
    assert_one_line_error(progagent("tasks", "list", "shop/restok", cwd=tmp_path, pool=tmp_path / "pool"),
                          "did you mean shop/restock?")


def test_run_unsafe_no_sandbox_runs_programs_unconfined(tmp_path):
    """A program looks for a file of the host's /tmp: the sandbox hides it, --unsafe-no-sandbox does not."""
    marker = tmp_path / "host_marker.txt"
    marker.write_text("host")
    code = f"import os\nprint('MARKER_SEEN', os.path.exists({str(marker)!r}))"
    turns = tmp_path / "probe.txt"
    turns.write_text(json.dumps({"name": "programmatic_tool_call", "arguments": {"code": code}}).join(
        ["<tool_call>", "</tool_call>"]) + "\n---\n" + '<tool_call>{"name": "claim_done", "arguments": {"action": "done"}}'
        "</tool_call>")
    seen = {}
    for flag in ([], ["--unsafe-no-sandbox"]):
        out = tmp_path / f"probe{len(flag)}.jsonl"
        done = progagent("run", "--tasks", "retail/restock_orders", "--policy", f"replay:{turns}", "--out", str(out),
                         "--no-progress", *flag, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        text = out.read_text()
        seen[bool(flag)] = "MARKER_SEEN True" in text
        assert "MARKER_SEEN" in text
    assert seen == {False: False, True: True}


def imported_modules(*argv: str, tmp_path: Path) -> set[str]:
    """The modules in sys.modules after `progagent ARGV`: the console script run by runpy in a fresh interpreter."""
    listing = tmp_path / "modules.json"
    script = ("import atexit, json, runpy, sys\n"
              f"atexit.register(lambda: open({str(listing)!r}, 'w').write(json.dumps(sorted(sys.modules))))\n"
              f"sys.argv = [{str(PROGAGENT)!r}, *sys.argv[1:]]\n"
              "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", script, *argv], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(listing.read_text()))


def test_help_imports_no_command_module_nor_its_heavy_dependencies(tmp_path):
    modules = imported_modules("--help", tmp_path=tmp_path)
    assert "progagent_lib.cli" in modules
    assert not {m for m in modules if m.split(".")[0] in HEAVY}, sorted(m for m in modules if m.split(".")[0] in HEAVY)
    command_modules = {m for m in modules if m.endswith(".cli") or m.endswith("_cli")} - {"progagent_lib.cli"}
    assert not command_modules, command_modules


def test_a_command_imports_only_its_own_module(tmp_path):
    modules = imported_modules("tasks", "list", "retail", tmp_path=tmp_path)
    assert "progagent_lib.task.cli" in modules
    others = {"progagent_lib.harness.cli", "progagent_lib.train.cli", "progagent_lib.synthesis.cli",
              "progagent_lib.benchmarks.cli", "progagent_lib.engine.cli", "progagent_lib.analysis.cli"}
    assert not modules & others, modules & others
    assert not {m for m in modules if m.split(".")[0] in ("torch", "transformers", "trl")}


def test_help_lists_every_command_and_a_missing_module_is_one_line(monkeypatch, capsys):
    """A command whose module does not exist yet (as `view` was while written): --help still lists it, and running it
    says so in one line. In-process, with one entry added to the table for a module that does not exist."""
    from progagent_lib import cli

    monkeypatch.setattr(cli, "COMMANDS", cli.COMMANDS + (cli.Command("ghost", "a command still being written",
                                                                      "progagent_lib.harness.ghost_cli"),))
    assert cli.main(["--help"]) == 0
    listed = capsys.readouterr().out
    assert all(f"    {c.name} " in listed or f"    {c.name}\n" in listed for c in cli.COMMANDS)
    assert cli.main(["ghost", "x"]) == 1
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "ghost is not available: its module is not in this checkout" in err


def test_export_lists_its_two_forms(capsys):
    from progagent_lib.cli import main

    assert main(["export", "--help"]) == 0
    out = capsys.readouterr().out
    assert "progagent export trajectories" in out and "progagent export harbor|authors" in out
