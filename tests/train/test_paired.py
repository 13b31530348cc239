"""What RL adds, paired on the same instances (train.paired, progagent_lib.stats.paired_difference)."""
import json

import pytest

from progagent_lib.harness.trajectory import Trajectory, write_jsonl
from progagent_lib.stats import mcnemar_exact, paired_difference
from progagent_lib.train.paired import format_paired, paired_rows


def test_the_paired_difference_reads_instances_in_pairs():
    before = [0, 0, 1, 0, 1, 0, 0, 0, 1, 0]
    after = [1, 0, 1, 1, 1, 0, 1, 0, 1, 1]
    d = paired_difference(before, after)
    assert (d.units, d.a_mean, d.b_mean, d.difference) == (10, 0.3, 0.7, pytest.approx(0.4))
    assert (d.b_only, d.a_only) == (4, 0) and d.p_value == pytest.approx(0.125)   # 4 discordant, all one way: 2/16
    assert 0.0 < d.low <= 0.4 <= d.high <= 0.8
    assert paired_difference(before, after) == d                                   # seeded
    # the same outcomes: no difference and no discordance, whatever the rate
    same = paired_difference(after, after)
    assert (same.difference, same.low, same.high, same.p_value) == (0.0, 0.0, 0.0, 1.0)
    # rates (samples pooled per unit) are paired too, with no McNemar test
    assert paired_difference([0.25, 0.5], [0.75, 0.5]).p_value is None
    assert mcnemar_exact(3, 3) == 1.0 and mcnemar_exact(6, 0) == pytest.approx(2 / 64)
    with pytest.raises(ValueError, match="one A and one B per unit"):
        paired_difference([1], [1, 0])


def episode(stage, seed, reward, harness="ptc", task="retail/restock_orders"):
    return Trajectory(task, "v0", seed, harness, f"hf:model@{stage}", reward=reward, score=reward,
                      end_reason="claim_done")


def test_stages_are_compared_on_the_instances_both_played_and_a_same_weights_stage_reads_its_source(tmp_path):
    split_of = {("retail/restock_orders", "v0", s): "params" if s >= 1004 else "seeds" for s in range(1000, 1008)}
    outcomes = {"sft": [0, 1, 0, 0, 1, 0, 0, 0], "gspo": [1, 1, 0, 1, 1, 1, 0, 1]}
    for stage, rewards in outcomes.items():
        folder = tmp_path / "eval" / f"{stage}-ptc" / "greedy"
        folder.mkdir(parents=True)
        write_jsonl([episode(stage, 1000 + i, float(r)) for i, r in enumerate(rewards)], folder / "trajectories.jsonl")
    # the control's weights are SFT's (every step skipped): no episodes of its own, its rows point at SFT's
    learning = [{"stage": "control", "recipe": "ptc", "same_weights_as": "sft"}, {"stage": "gspo", "recipe": "ptc"}]
    rows = paired_rows(tmp_path, "ptc", split_of, ["greedy"], learning)
    by = {(r["a"], r["split"]): r for r in rows}
    assert set(by) == {("sft", "seeds"), ("sft", "params"), ("control", "seeds"), ("control", "params")}
    assert by[("sft", "seeds")]["units"] == 4 and by[("sft", "seeds")]["difference"] == pytest.approx(0.5)
    assert by[("sft", "params")]["difference"] == pytest.approx(0.5) and by[("sft", "params")]["b_only"] == 2
    assert by[("control", "params")] == {**by[("sft", "params")], "a": "control"}
    assert "gspo vs sft" in format_paired(rows) and "+0.50" in format_paired(rows)
    json.dumps(rows)   # written as paired.json
    # no RFT stage in this run: no such row; an instance only one stage played is not paired
    assert not any(r["a"] == "rft" for r in rows)
