"""fp32 master weights whatever the checkpoint holds (DESIGN 6b, issue 38 item 3; train.precision's docstring).

A bf16 checkpoint trained in bf16 weights loses small updates to rounding: 4 SFT steps at lr 1e-6 moved ~2% of its
elements, against ~100% from fp32. Here the same tiny model is saved in bf16 and as its fp32 copy (the same values),
and 4 SFT steps at lr 1e-6 from each must move about the same share of elements, nearly all. ~25 s on 2 cores.
"""
import pytest

from progagent_lib.train.precision import master_weights_dtype, sharded_by_launcher


def test_master_weights_are_fp32_unless_the_launcher_shards_the_model():
    import torch

    assert master_weights_dtype({}) is torch.float32
    assert master_weights_dtype({"ACCELERATE_USE_FSDP": "false"}) is torch.float32
    for flag in ("ACCELERATE_USE_DEEPSPEED", "ACCELERATE_USE_FSDP"):   # the engine keeps fp32 masters of its own
        assert sharded_by_launcher({flag: "true"}) and master_weights_dtype({flag: "true"}) is None


@pytest.fixture(scope="module")
def teacher(restock_task):
    from progagent_lib.harness.episode import run_episode
    from progagent_lib.policy import OracleTeacher

    return [run_episode(restock_task, "v0", 0, "ptc", OracleTeacher("ptc"))]


def changed_share(start: str, final: str) -> float:
    """The share of weight elements that differ between two checkpoints (compared in fp32)."""
    from safetensors.torch import load_file

    before, after = load_file(f"{start}/model.safetensors"), load_file(f"{final}/model.safetensors")
    changed = sum(int((after[k].float() != before[k].float()).sum()) for k in before)
    return changed / sum(t.numel() for t in before.values())


@pytest.mark.slow
def test_sft_from_a_bf16_checkpoint_moves_as_many_weights_as_from_its_fp32_copy(teacher, repo, tmp_path, monkeypatch):
    import torch

    from progagent_lib.generation.model_folder import save_model
    from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model
    from progagent_lib.train.sft import SFTRunConfig, run_sft

    monkeypatch.chdir(repo)
    model, tokenizer = build_tiny_model("tasks", TinyModelConfig(vocab_size=1024, hidden_size=64, intermediate_size=128,
                                                                 head_dim=16))
    save_model(model.to(torch.bfloat16), tokenizer, tmp_path / "bf16")
    save_model(model.to(torch.float32), tokenizer, tmp_path / "fp32")   # the bf16 values, upcast
    shares = {}
    for start in ("bf16", "fp32"):
        config = SFTRunConfig(model=str(tmp_path / start), output_dir=str(tmp_path / f"sft-{start}"),
                              task_ids=["retail/restock_orders"], harnesses=["ptc"], max_length=None, max_steps=4,
                              learning_rate=1e-6, lr_scheduler_type="constant")
        final = run_sft(config, teacher)["final_model"]
        shares[start] = changed_share(str(tmp_path / start), final)
    assert shares["fp32"] > 0.9, shares
    assert abs(shares["bf16"] - shares["fp32"]) < 0.05, f"a bf16 checkpoint trained in bf16 weights: {shares}"
