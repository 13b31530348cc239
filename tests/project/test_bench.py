"""Every script under bench/ runs here in its quick mode, so a benchmark that rots fails CI.

The quick modes check that each benchmark still runs end to end and prints its table; their numbers
are too noisy to judge (the full runs compare against a baseline measured in the same run).
"""
import subprocess
import sys

import pytest

from conftest import REPO

BENCH = REPO / "bench"
QUICK_ARGS = {
    "cli.py": ["--quick"],
    "runtime.py": ["--quick"],
    "runtime_vs.py": ["--quick"],
    "load.py": ["--quick"],
    "live_episodes.py": ["--quick"],   # 4 live kernels held here, 2 on a local OpenEnv server
    "teacher_programs.py": ["--quick"],
    "verify.py": ["--quick"],
    # one GSPO step of teacher-replay under DTC: the real trainer, kernel, tools and verifier, no sampling
    "train.py": ["--steps", "1", "--harnesses", "dtc", "--kinds", "teacher-replay"],
    # the four kinds of step on SmolLM2 at one short length, fp32, TRL's tile (one process each)
    "train_memory.py": ["--lengths", "128", "--repeats", "1", "--precisions", "fp32", "--chunk", "none",
                        "--fp32-max-length", "128", "--kinds", "baseline,sft,gspo,gspo-split"],
    # two GSPO steps of a tiny model's LoRA adapters (cpu-smoke's GSPO trains them) with the group's prompt computed
    # once and per episode (one process each); the script fails if the trainer did not share the prompt
    "shared_prompt.py": ["--quick", "--lora", "4"],
}
# Scripts whose quick mode another test runs, because they need a fixture that lives there (named here, and
# checked to exist, so moving or renaming that test fails this file).
QUICK_ELSEWHERE = {
    # needs the vLLM server that tests/engine/test_engine.py starts once for its module
    "engine.py": ("engine/test_engine.py", "def test_bench_quick_mode_against_the_running_engine("),
    "rollout_modes.py": ("engine/test_engine.py", "def test_rollout_modes_bench_quick_mode_against_the_running_engine("),
    "evaluate_together.py": ("engine/test_engine.py",
                             "def test_evaluate_together_bench_quick_mode_against_the_running_engine("),
}


def test_every_bench_script_has_a_quick_mode_here():
    missing = sorted(p.name for p in BENCH.glob("*.py") if p.name not in QUICK_ARGS and p.name not in QUICK_ELSEWHERE)
    assert not missing, (f"bench/{', bench/'.join(missing)}: no quick mode in tests/project/test_bench.py QUICK_ARGS; give the "
                         "script a quick mode (a few repeats) and add its arguments there, so CI runs it")
    for script, (test_file, test_def) in QUICK_ELSEWHERE.items():
        assert test_def in (REPO / "tests" / test_file).read_text(), \
            f"bench/{script}: its quick mode should run in tests/{test_file} ({test_def.strip('(')}), which is gone"


def test_no_bench_script_shadows_an_installed_module():
    """A script's folder comes first on sys.path: bench/kernels.py once hid the `kernels` package that transformers
    imports, and every bench that loads a model died of it."""
    names = sorted(p.stem for p in BENCH.glob("*.py"))
    code = "import importlib.util, sys; print([n for n in sys.argv[1:] if importlib.util.find_spec(n)])"
    found = subprocess.run([sys.executable, "-c", code, *names], cwd="/", capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]", f"bench/ scripts named like installed modules: {found.stdout.strip()}"


@pytest.mark.parametrize("script", [pytest.param(name, marks=pytest.mark.slow) if name in ("train.py", "train_memory.py") else name
                                    for name in sorted(QUICK_ARGS)])
def test_bench_script_runs_in_quick_mode(script):
    result = subprocess.run([sys.executable, str(BENCH / script), *QUICK_ARGS[script]], cwd=REPO,
                            capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, f"bench/{script} failed:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
    if script == "runtime.py":
        assert "cold kernel vs pool acquire" in result.stdout and "detection rate" in result.stdout
    elif script == "train.py":
        assert "| teacher-replay | dtc |" in result.stdout
    elif script == "train_memory.py":
        assert result.stdout.count("┆ ok ") == 4 and "peak_vs_baseline" in result.stdout
    else:
        assert result.stdout.strip()
