"""The pretrained small model through one SFT step and one GSPO step, with a short context (the cheap version of
what cpu-smoke runs for learning): the real SmolLM2 weights, TRL's trainers, the real task, kernel and verifier."""
import pytest

from progagent_lib.harness import Limits, run_episode
from progagent_lib.policy import OracleTeacher


@pytest.mark.slow
def test_one_sft_step_then_one_gspo_step_on_smollm2(tmp_path, repo, monkeypatch, restock_task):
    from progagent_lib.train.gspo import GSPORunConfig, run_gspo
    from progagent_lib.generation.model_folder import model_metadata
    from progagent_lib.train.sft import SFTRunConfig, run_sft

    monkeypatch.chdir(repo)
    # A short teacher conversation: its first two turns (real observations), so the step fits a short context.
    short = run_episode(restock_task, "v0", 0, "ptc", OracleTeacher("ptc"), Limits(max_turns=2, max_tool_calls=None,
                                                                                   max_context_tokens=None))
    sft = run_sft(SFTRunConfig(model="smollm2", output_dir=str(tmp_path / "sft"), task_ids=[restock_task.id],
                               harnesses=["ptc"], min_score=0.0, max_length=4096, max_steps=1, learning_rate=1e-5),
                  [short])
    assert sft["steps"] == 1 and sft["first_loss"] > 0 and sft["chat_format"]["end_of_turn"] == "<|im_end|>"
    assert model_metadata(sft["final_model"])["chat_template"]["name"] == "qwen3"
    rl = run_gspo(GSPORunConfig(model=sft["final_model"], output_dir=str(tmp_path / "gspo"), task_ids=[restock_task.id],
                                harness="ptc", scales=["v0"], train_seeds=[0], num_generations=2, num_iterations=1,
                                max_steps=1, save_steps=1, max_turns=1, max_new_tokens=16, max_context_tokens=4096,
                                learning_rate=1e-6))
    assert rl["global_step"] == 1 and len(rl["dynamics"]) == 1
    step = rl["dynamics"][0]
    assert step["episodes"] == 2 and (step["generation"], step["pass"]) == (1, 1) and "loss" in step
