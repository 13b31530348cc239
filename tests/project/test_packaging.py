"""`pip install .` outside the checkout: the wheel carries the library, the task pool and the console script, and an
installed pool's oracles stay out of the sandbox's reach.

The wheel is built once (`pip wheel --no-deps --no-build-isolation`, from a copy of the repository without its runs,
figures and dot-folders, so that nothing is written into the checkout) and installed with `--no-deps` into a fresh
venv whose other packages are .venv's, reached through a .pth file: only this project is installed fresh, not the
twenty minutes of its requirements. One exception: the kernel's own (ipykernel and what it imports, at .venv's
versions) are installed into the venv for real, because a sandbox sees only the host's interpreter and venv, not
.venv's folder beyond the .pth (pip's cache or the index: about 15 s here). Every command runs with its working
folder in a temporary folder, where there is no `tasks/` and no `progagent_lib/`.
"""
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
LEFT_OUT = {"runs", "figures", "build", "__pycache__"}   # large or generated; never part of the wheel


def run(command: list[str], cwd: Path, timeout: int = 300) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PROGAGENT_TASKS", "PYTHONPATH")}
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, f"{' '.join(map(str, command))} exited {done.returncode}:\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """A venv with the wheel of this checkout installed (and .venv's packages beside it); its bin/ folder."""
    work = tmp_path_factory.mktemp("packaging")
    source = work / "source"
    shutil.copytree(REPO, source, ignore=lambda folder, names: [
        n for n in names if n in LEFT_OUT or n.endswith(".egg-info") or (Path(folder) == REPO and n.startswith("."))])
    run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--wheel-dir",
         str(work / "dist"), str(source)], cwd=work)
    wheel = next((work / "dist").glob("progagent_workbench-*.whl"))
    venv = work / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(venv)], cwd=work)
    purelib = run([str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                  cwd=work).stdout.strip()
    Path(purelib, "dot-venv-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    freeze = run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"], cwd=work).stdout
    (work / "constraints.txt").write_text("".join(f"{line}\n" for line in freeze.splitlines() if "==" in line))
    # --ignore-installed: .venv's packages, seen through the .pth, would satisfy pip; here they must be the venv's own.
    run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet",
         "--ignore-installed", "--constraint", str(work / "constraints.txt"), "ipykernel"], cwd=work)
    # (and .venv's own editable install of this project must stay as it is)
    run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--quiet", "--no-deps",
         "--no-index", "--ignore-installed", str(wheel)], cwd=work)
    return venv / "bin"


@pytest.fixture
def elsewhere(tmp_path) -> Path:
    """A working folder outside the checkout."""
    assert not (tmp_path / "tasks").exists()
    return tmp_path


def test_the_console_script_runs_an_oracle_episode_by_task_id_outside_the_checkout(installed, elsewhere):
    run([str(installed / "progagent"), "run", "--tasks", "retail/restock_orders", "--policy", "oracle",
         "--out", "episodes.jsonl", "--no-progress"], cwd=elsewhere)
    episodes = [json.loads(line) for line in (elsewhere / "episodes.jsonl").read_text().splitlines()]
    assert [(e["task_id"], e["reward"]) for e in episodes] == [("retail/restock_orders", 1.0)]
    version = run([str(installed / "progagent"), "--version"], cwd=elsewhere).stdout
    assert version.strip() == f"progagent {tomllib.loads((REPO / 'pyproject.toml').read_text())['project']['version']}"


def test_the_installed_library_and_pool_are_the_wheels(installed, elsewhere):
    probe = ("import json, progagent_lib\n"
             "from progagent_lib import load_pool, load_task\n"
             "from progagent_lib.task.ids import pool_root\n"
             "print(json.dumps({'library': progagent_lib.__file__, 'pool': str(pool_root()),\n"
             "                  'tasks': len(load_pool(pool_root())),\n"
             "                  'by_path': str(load_task('tasks/retail/restock_orders').root)}))")
    found = json.loads(run([str(installed / "python"), "-c", probe], cwd=elsewhere).stdout)
    site = Path(found["library"]).parents[1]
    assert site.name == "site-packages" and installed.parent in site.parents   # not the checkout's progagent_lib
    assert Path(found["pool"]) == site / "progagent_tasks"
    assert found["by_path"] == str(site / "progagent_tasks" / "retail" / "restock_orders")   # the docs' path form
    assert found["tasks"] == len(list((REPO / "tasks").rglob("task.toml")))


def test_an_installed_pool_is_out_of_the_sandboxs_reach(installed, elsewhere):
    """The installed pool lies in site-packages, which every sandbox reads: its oracle must not exist in the sandbox's
    view (an empty tmpfs covers the pool there), and the pool's folder is sealed (0700) as a second wall."""
    probe = ("from progagent_lib import load_task\n"
             "from progagent_lib.runtime import PTCRuntime\n"
             "task = load_task('retail/restock_orders')\n"
             "env = task.instantiate('v0', 0)\n"
             "program = f'print(open({str(task.root / \"oracle.py\")!r}).read()[:300])'\n"
             "with PTCRuntime(env) as runtime:\n"
             "    result = runtime.execute(program, timeout=60)\n"
             "env.close()\n"
             "print('ERROR', result.error.name if result.error else None)\n"
             "print(result.output)")
    seen = run([str(installed / "python"), "-c", probe], cwd=elsewhere).stdout
    assert "ERROR FileNotFoundError" in seen and "def solve" not in seen, seen[-2000:]


def test_the_gpu_extra_is_what_requirements_gpu_adds():
    lines = [line.split("#")[0].strip() for line in (REPO / "requirements-gpu.txt").read_text().splitlines()]
    added = sorted(line for line in lines if line and not line.startswith("-r"))
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert sorted(extras["gpu"]) == added


def test_runtime_requirements_hold_no_test_or_notebook_tool():
    runtime = (REPO / "requirements.txt").read_text().lower()
    for tool in ("pytest", "nbval", "playwright", "jupyterlab", "papermill"):
        assert f"\n{tool}" not in runtime, f"{tool} belongs in an extra (pyproject.toml: dev or notebooks)"
