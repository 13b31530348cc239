"""Every fenced code block in README.md and docs/*.md is run here, or marked as not run with the reason why.

A block is, by its info string and the line before it:
- ```python: run as a script by the project's python, in the repository;
- ```bash (sh, shell) of `progagent` commands (piped, at most, into head, tail, grep or wc): run by bash
  (`set -eo pipefail`), .venv/bin first on PATH, in the repository;
- ```text: output (a command's, or a listing); nothing to run;
- after `<!-- not run: REASON -->` (the last non-blank line before the fence): not run, for that reason (a slow,
  serving or installing command, an excerpt); the reason must be given;
- anything else unmarked is an error: a block of no language or another (yaml, ...), and a shell block that runs
  any other command (make, pip, a server, a cluster launcher, ...), which is never run here, so that no page can
  install, delete or launch anything through this test.

A page's blocks run in order, in one temporary folder: every path under `runs/` is moved there, so nothing is written
into the checkout, and a later block reads what an earlier one wrote, as a reader following the page would. A block
that fails, or runs past BLOCK_TIMEOUT_S, fails the test with the page and line; a block meant to be slow gets the
marker instead. docs/cli.md is generated from --help (scripts/gen_cli_docs.py) and checked by tests/project/test_cli_docs.py.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GENERATED = {REPO / "docs" / "cli.md"}
VENV_PYTHON = REPO / ".venv" / "bin" / "python"
PYTHON = VENV_PYTHON if VENV_PYTHON.exists() else Path(sys.executable)
BLOCK_TIMEOUT_S = 90

RUN_LANGUAGES = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}
OUTPUT_LANGUAGES = {"text", "output"}
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\s]*)[^`]*$")
NOT_RUN = re.compile(r"^\s*<!--\s*not run:(?P<reason>.*?)-->\s*$")
RUNS_PATH = re.compile(r"(?<![\w./-])runs/")
# The commands a shell block may run unmarked: the workbench's own, and filters of their output.
RUNNABLE_COMMANDS = {"progagent", ".venv/bin/progagent", "head", "tail", "grep", "wc"}
COMMAND_SEPARATOR = re.compile(r"&&|\|\||[;|&]")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")


@dataclass
class Block:
    page: Path
    line: int          # 1-based line of the opening fence
    language: str
    code: str
    not_run: str | None  # the marker's reason, "" for a marker without one, None when unmarked

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO) if self.page.is_relative_to(REPO) else self.page}:{self.line}"

    def foreign_command(self) -> str | None:
        """The first command of a shell block that is not in RUNNABLE_COMMANDS (comments and VAR=value ignored)."""
        if RUN_LANGUAGES.get(self.language) != "bash":
            return None
        script = re.sub(r"\\\n", " ", self.code)
        for line in script.splitlines():
            for command in COMMAND_SEPARATOR.split(re.sub(r"(^|\s)#.*$", "", line)):
                words = [w for w in command.split() if not ASSIGNMENT.match(w)] if command.strip() else []
                if words and words[0] not in RUNNABLE_COMMANDS:
                    return command.strip()
        return None

    @property
    def kind(self) -> str:
        """run, output, not-run, or the problem that makes the block an error."""
        if self.not_run is not None:
            return "not-run" if self.not_run else "error: `<!-- not run: -->` without a reason"
        if self.language in RUN_LANGUAGES:
            foreign = self.foreign_command()
            if foreign:
                program = next(w for w in foreign.split() if not ASSIGNMENT.match(w))
                return (f"error: an unmarked ```{self.language} block runs {program!r}, and only progagent "
                        "commands are run here: add `<!-- not run: REASON -->` on the line before it")
            return "run"
        if self.language in OUTPUT_LANGUAGES:
            return "output"
        return (f"error: a ```{self.language or '(no language)'} block is neither run nor marked: add "
                "`<!-- not run: REASON -->` on the line before it, or write it as ```text if it is output")


def code_blocks(page: Path) -> list[Block]:
    """The fenced blocks of a markdown page, with the not-run marker that precedes each."""
    lines = page.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, fence = opening["indent"], opening["fence"]
        end = i + 1
        while end < len(lines) and not re.match(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", lines[end]):
            end += 1
        if end == len(lines):
            raise AssertionError(f"{page}:{i + 1}: a code block that is never closed")
        body = [line[len(indent):] if line.startswith(indent) else line.lstrip() for line in lines[i + 1:end]]
        before = next((lines[j] for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        marker = NOT_RUN.match(before)
        blocks.append(Block(page, i + 1, opening["info"].lower(), "\n".join(body) + "\n",
                            marker["reason"].strip() if marker else None))
        i = end + 1
    return blocks


def doc_pages() -> list[Path]:
    return [REPO / "README.md"] + [p for p in sorted((REPO / "docs").glob("*.md")) if p not in GENERATED]


def in_workdir(code: str, workdir: Path) -> str:
    """The block with every `runs/...` path moved under `workdir`."""
    return RUNS_PATH.sub(f"{workdir}/runs/", code)


def run_block(block: Block, workdir: Path) -> subprocess.CompletedProcess:
    """Run one block (its `runs/` paths under `workdir`); returns its result, killing its process group on timeout."""
    (workdir / "runs").mkdir(parents=True, exist_ok=True)
    code = in_workdir(block.code, workdir)
    if RUN_LANGUAGES[block.language] == "python":
        script = workdir / f"block_{block.line}.py"
        script.write_text(code)
        argv = [str(PYTHON), str(script)]
    else:
        argv = ["bash", "-c", "set -eo pipefail\n" + code]
    env = dict(os.environ, PATH=f"{PYTHON.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    env.setdefault("PROGAGENT_CACHE", str(REPO / ".cache" / "progagent"))   # as the Makefile and conftest
    proc = subprocess.Popen(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    try:
        output, _ = proc.communicate(timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)   # the block's servers and kernels too, not just its shell
        output, _ = proc.communicate()
        return subprocess.CompletedProcess(argv, -1, f"ran past {BLOCK_TIMEOUT_S} s: mark it `<!-- not run: -->` "
                                                     f"if it is meant to be slow\n{output}")
    return subprocess.CompletedProcess(argv, proc.returncode, output)


def failures_of(page: Path, workdir: Path) -> list[str]:
    """Run every runnable block of `page` in order; one line (and the output's tail) per block that failed."""
    failed = []
    for block in code_blocks(page):
        if block.kind != "run":
            continue
        done = run_block(block, workdir)
        if done.returncode != 0:
            tail = "\n".join(done.stdout.strip().splitlines()[-15:])
            failed.append(f"{block.where} (```{block.language}) exited {done.returncode}:\n{tail}")
    return failed


# --- the pages -----------------------------------------------------------------------------------
def test_every_block_is_run_output_or_marked_with_a_reason():
    problems = [f"{b.where}: {b.kind}" for page in doc_pages() for b in code_blocks(page) if b.kind.startswith("error")]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", doc_pages(), ids=lambda p: p.relative_to(REPO).as_posix())
def test_the_runnable_blocks_of_the_page_run(page, tmp_path):
    failed = failures_of(page, tmp_path)
    assert not failed, "\n\n".join(failed)


def test_the_front_door_is_short_and_runs_an_episode_first():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    first_run = next(b for b in code_blocks(REPO / "README.md") if b.kind == "run")
    assert "progagent run" in first_run.code and "--policy oracle" in first_run.code


# --- the checker itself, on pages written here ----------------------------------------------------
def page_with(tmp_path: Path, text: str) -> Path:
    page = tmp_path / "page.md"
    page.write_text(text)
    return page


def test_unmarked_blocks_that_cannot_run_are_errors_and_marked_ones_are_not(tmp_path):
    page = page_with(tmp_path, "Intro.\n\n```yaml\nkey: 1\n```\n\n<!-- not run: serves until Ctrl-C -->\n\n"
                               "```bash\nprogagent serve --task x\n```\n\n<!-- not run: -->\n```python\nx = 1\n```\n\n"
                               "```\nno language\n```\n\n```text\nan output\n```\n\n  ```python\n  print(1)\n  ```\n")
    kinds = [(b.line, b.kind.split(":")[0], b.language) for b in code_blocks(page)]
    assert kinds == [(3, "error", "yaml"), (9, "not-run", "bash"), (14, "error", "python"), (18, "error", ""),
                     (22, "output", "text"), (26, "run", "python")]
    assert code_blocks(page)[-1].code == "print(1)\n"     # a block inside a list item, dedented


def test_an_unmarked_shell_block_of_other_commands_is_an_error_and_is_never_run(tmp_path):
    marker = tmp_path / "ran"
    page = page_with(tmp_path, "```bash\nprogagent tasks list retail | head -3   # make sure the pool loads\n```\n\n"
                               f"```bash\ntouch {marker} && make install-gpu\n```\n\n"
                               "```bash\nprogagent --version\n.venv/bin/python -m pip list\n```\n\n"
                               f"```sh\nX=1 progagent --version; rm -rf {tmp_path}/nothing\n```\n\n"
                               "```bash\nCUDA_VISIBLE_DEVICES=0 progagent --version \\\n  && torchrun train.py\n```\n\n"
                               "<!-- not run: installs -->\n```bash\nmake install\n```\n")
    kinds = [b.kind.split(" ")[0] for b in code_blocks(page)]
    assert kinds == ["run", "error:", "error:", "error:", "error:", "not-run"]
    assert [b.foreign_command() for b in code_blocks(page)] == [
        None, f"touch {marker}", ".venv/bin/python -m pip list", f"rm -rf {tmp_path}/nothing", "torchrun train.py",
        "make install"]
    assert failures_of(page, tmp_path / "work") == []    # only the first block ran, and it passed
    assert not marker.exists()                            # the others were not run


def test_a_failing_block_is_reported_with_its_line_and_a_working_one_is_not(tmp_path):
    page = page_with(tmp_path, "```python\nprint('fine')\n```\n\n```bash\nprogagent run --tasks retail/restock_orders "
                               "--policy orcale --out runs/x.jsonl\n```\n\n```python\nraise SystemExit(3)\n```\n")
    failed = failures_of(page, tmp_path / "work")
    assert len(failed) == 2
    assert failed[0].startswith(f"{page}:5 (```bash) exited 2") and "orcale" in failed[0]
    assert failed[1].startswith(f"{page}:9 (```python) exited 3")


def test_runs_paths_are_moved_out_of_the_checkout(tmp_path):
    code = "progagent run --out runs/a.jsonl; progagent view runs/a.jsonl -o /x/runs/b.html # figures/runs/c"
    assert in_workdir(code, tmp_path) == (f"progagent run --out {tmp_path}/runs/a.jsonl; progagent view "
                                          f"{tmp_path}/runs/a.jsonl -o /x/runs/b.html # figures/runs/c")
