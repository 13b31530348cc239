"""The pipeline under several ranks gives the single process's files (DESIGN 6b, issue 38 item 1).

The ci profile runs twice, as one process and under `torchrun --nproc_per_node 2` (gloo, CPU), into two folders: the
same files with the same line counts (every evaluation, the teacher and the learning rows written once, not once per
rank), the same learning.jsonl rows, and bit-identical trained SFT weights (the two ranks' data-parallel gradients
average to the single process's). Only the trainer's resume state differs in kind: a checkpoint of a two-rank run
holds one RNG state per rank. About 2 minutes on 2 cores (each run ~1 minute, one torch thread per process).
`train sft` with a stage config under two ranks plays and writes the teacher once (~40 s).
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

TORCHRUN = Path(sys.executable).with_name("torchrun")
# A checkpoint's resume state for the trainer (one RNG file per rank; the pickled arguments, which name the rank; the
# step's metrics, some reported only by a multi-rank loss): the only files allowed to differ between the runs.
PER_RANK = ("rng_state", "training_args.bin", "trainer_state.json")
TEXT = (".json", ".jsonl", ".md", ".jinja")   # weights are compared tensor by tensor, not by lines
# What a learning row says about the model's episodes: it must not depend on the number of ranks.
ROW_KEYS = ("stage", "recipe", "harness", "split", "decoding", "instances", "episodes", "passed", "pass_rate",
            "mean_score", "tool_calls", "turns", "tool_output_tokens", "claim_done_rate", "same_weights_as")


ON_MAIN_WORKER = """
import json, sys
from progagent_lib.train import ranks
from progagent_lib.train.feasibility import NotLearnableError

me, ran = ranks.rank(), []

def decide():   # a decision that branches: taken on the main rank only, nested on_main a plain call there
    ran.append(me)
    return {"decided_by": ranks.rank(), "nested": ranks.on_main(ranks.rank)}

def refuse():
    raise NotLearnableError("the teacher cannot finish retail/restock_orders")

decision = ranks.on_main(decide)
try:
    ranks.on_main(refuse)
    refused = None
except NotLearnableError as exc:
    refused = str(exc)
result = {"world": ranks.world_size(), "decision": decision, "ran": ran, "refused": refused,
          "gathered": ranks.gather_lists([me])}
open(f"{sys.argv[1]}/{me}.json", "w").write(json.dumps(result))
"""


def test_a_decision_and_a_refusal_on_the_main_rank_reach_every_rank(repo, tmp_path):
    """~10 s: two gloo ranks; what the main rank decided (or refused) is what every rank gets, computed once."""
    worker = tmp_path / "worker.py"
    worker.write_text(ON_MAIN_WORKER)
    done = subprocess.run([str(TORCHRUN), "--standalone", "--nproc_per_node=2", str(worker), str(tmp_path)], cwd=repo,
                          env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(repo)}, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    results = [json.loads((tmp_path / f"{rank}.json").read_text()) for rank in (0, 1)]
    for rank, result in enumerate(results):
        assert result["world"] == 2 and result["gathered"] == [0, 1]
        assert result["decision"] == {"decided_by": 0, "nested": 0}
        assert result["ran"] == ([0] if rank == 0 else [])   # computed once
        assert result["refused"] == "the teacher cannot finish retail/restock_orders"


def run_ci_pipeline(repo: Path, out: Path, ranks: int) -> None:
    command = [sys.executable, "-m", "progagent_lib.train.cli", "pipeline", "--config", "configs/ci.yaml",
               "--output-dir", str(out)]
    if ranks > 1:
        command = [str(TORCHRUN), "--standalone", f"--nproc_per_node={ranks}", *command[1:]]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}   # torchrun's default per rank; the same for the single process
    done = subprocess.run(command, cwd=repo, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, f"{' '.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-6000:]}"


def file_lines(root: Path) -> dict[str, int | None]:
    """Every file under `root` (but the per-rank resume state) -> its line count (None: not a text file)."""
    return {str(path.relative_to(root)): len(path.read_bytes().splitlines()) if path.suffix in TEXT else None
            for path in sorted(root.rglob("*")) if path.is_file() and not any(part in path.name for part in PER_RANK)}


def learning_rows(root: Path) -> list[dict]:
    rows = [json.loads(line) for line in (root / "learning.jsonl").read_text().splitlines() if line.strip()]
    return [{key: row.get(key) for key in ROW_KEYS} for row in rows]


@pytest.fixture(scope="module")
def runs(repo, tmp_path_factory):
    base = tmp_path_factory.mktemp("ranks")
    run_ci_pipeline(repo, base / "one", ranks=1)
    run_ci_pipeline(repo, base / "two", ranks=2)
    return base / "one", base / "two"


@pytest.mark.slow
def test_two_ranks_write_the_single_process_files(runs):
    one, two = runs
    assert sorted((two / "gspo-ptc" / "checkpoint-1").glob("rng_state_*.pth")), "the two-rank run did not train on 2 ranks"
    assert file_lines(two) == file_lines(one)
    # written once: one teacher episode (one task, seed, harness), one episode per held-out instance per evaluation
    assert file_lines(one)["teacher.jsonl"] == 1
    instances = len(json.loads((one / "splits.json").read_text()))
    for stage in ("memorize-ptc", "sft-ptc/greedy", "control-ptc/greedy"):
        assert file_lines(two)[f"eval/{stage}/trajectories.jsonl"] == instances


@pytest.mark.slow
def test_two_ranks_give_the_single_process_learning_rows_and_weights(runs):
    from progagent_lib.train.pipeline import same_weights

    one, two = runs
    assert learning_rows(two) == learning_rows(one)
    assert len(learning_rows(one)) == 5 * 3   # memorize, sft, gspo, control, rft x three splits
    for model in ("sft-ptc/initial", "sft-ptc/final", "gspo-ptc/final", "control-ptc/final"):
        assert same_weights(one / model, two / model), model


SFT_STAGE = """\
output_dir: {out}
model: tiny
tiny: {{vocab_size: 2048, hidden_size: 32, intermediate_size: 64, num_hidden_layers: 1, num_attention_heads: 2,
        num_key_value_heads: 1, head_dim: 16}}
task_ids: [retail/restock_orders]
harnesses: [ptc]
seeds: [0]
max_steps: 1
max_length: 8192
"""


@pytest.mark.slow
def test_train_sft_on_two_ranks_plays_the_teacher_once(repo, tmp_path):
    config = tmp_path / "sft.yaml"
    config.write_text(SFT_STAGE.format(out=tmp_path / "sft"))
    command = [str(TORCHRUN), "--standalone", "--nproc_per_node=2", "-m", "progagent_lib.train.cli", "sft",
               "--config", str(config)]
    done = subprocess.run(command, cwd=repo, env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True,
                          text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    out = tmp_path / "sft"
    assert len((out / "teacher.jsonl").read_text().splitlines()) == 1   # one task, seed and harness: one episode
    summary = json.loads((out / "sft_summary.json").read_text())
    assert summary["dataset"]["kept"] == {"ptc": 1} and summary["steps"] == 1
    assert (out / "final" / "model.safetensors").is_file() and (out / "initial" / "model.safetensors").is_file()
