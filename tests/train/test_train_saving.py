"""Saving survives sharding (DESIGN 6b, issue 38 item 2): every trained model leaves through train.saving.save_final,
which gathers the whole weights (accelerate's full state dict; torch's for FSDP2) and merges LoRA on them.

Checked for real on CPU: `torchrun --nproc_per_node 2` (gloo) runs this file as a worker (`__main__` below), which
trains a tiny random Llama (2 layers, 64 hidden) under DDP (transformers' Trainer), under FSDP2 (`fully_shard`, each
rank holding half of every weight) and under FSDP2 with LoRA, saves each through save_final, and compares the reloaded
`final/` with the trained weights gathered independently. ~30 s on 2 cores. DeepSpeed ZeRO-3 is not installed here:
its path is accelerate's `get_state_dict` (ZeRO-3's consolidated 16-bit weights), checked by the static test only.
"""
import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TRAIN = REPO / "progagent_lib" / "train"
# The modules that hold a trainer (SFT, GSPO, the pipeline's stages around them) ...
STAGE_MODULES = ("sft.py", "gspo.py", "gspo_trainer.py", "pipeline.py", "evaluate.py", "rollout.py", "common.py")
# ... and the calls that write or reshape a trained model's weights, which only saving.py may make.
WEIGHT_WRITERS = {"save_pretrained", "save_model", "merge_and_unload", "_save", "save_state"}


def calls_in(path: Path) -> list[tuple[str, int]]:
    """(called name, line) of every call in a module: `f(...)` and `obj.f(...)`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call):
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            found.append((name, node.lineno))
    return found


def test_every_trained_model_is_saved_through_the_sharding_safe_path():
    stray = [f"{module}:{line} {name}()" for module in STAGE_MODULES for name, line in calls_in(TRAIN / module)
             if name in WEIGHT_WRITERS]
    assert not stray, f"a trained model saved or merged outside train.saving.save_final: {stray}"
    for stage in ("sft.py", "gspo.py"):   # each stage's final model goes through save_final, with the trainer's accelerator
        source = (TRAIN / stage).read_text()
        assert "save_final(trainer.model_wrapped, tokenizer, output_dir / \"final\", accelerator=trainer.accelerator)" \
            in source, stage
    saving = (TRAIN / "saving.py").read_text()
    assert "accelerator.get_state_dict(model)" in saving and "StateDictOptions(full_state_dict=True" in saving


def test_lora_is_merged_on_the_gathered_weights_and_tied_embeddings_stay_tied(tmp_path):
    """In one process: a LoRA model of tied Qwen3 saves merged, equal to peft's own merge, with the tie kept."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, Qwen3Config

    from progagent_lib.generation.tiny_model import train_tokenizer
    from progagent_lib.train.saving import save_final

    tokenizer = train_tokenizer(["select rows from the table where a < b"] * 8, 300)
    torch.manual_seed(0)
    base = AutoModelForCausalLM.from_config(Qwen3Config(
        vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, head_dim=16, tie_word_embeddings=True))
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules="all-linear", task_type="CAUSAL_LM"))
    for name, weight in model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(weight)   # peft starts B at 0 (a no-op adapter); a trained one is not
    save_final(model, tokenizer, tmp_path / "final")
    saved = AutoModelForCausalLM.from_pretrained(tmp_path / "final")
    assert not (tmp_path / "final" / "adapter_config.json").exists()
    assert model.peft_config, "saving merged the trained model itself"
    expected = model.merge_and_unload().state_dict()
    assert saved.config.tie_word_embeddings
    assert saved.lm_head.weight.data_ptr() == saved.model.embed_tokens.weight.data_ptr()
    for name, weight in saved.state_dict().items():
        assert torch.equal(weight, expected[name]), name


@pytest.mark.slow
def test_ddp_and_fsdp2_on_two_ranks_save_a_final_equal_to_the_trained_weights(tmp_path):
    torchrun = Path(sys.executable).with_name("torchrun")
    done = subprocess.run([str(torchrun), "--standalone", "--nproc_per_node=2", __file__, str(tmp_path)], cwd=REPO,
                          env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True, timeout=600,
                          check=False)
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-6000:]}"
    results = json.loads((tmp_path / "results.json").read_text())
    assert set(results) == {"ddp", "fsdp2", "fsdp2-lora"}
    for case, result in results.items():
        assert result["ranks"] == 2 and result["sharded"] == case.startswith("fsdp2"), (case, result)
        assert result["trained"], f"{case}: training did not move the weights, so the comparison would prove nothing"
        assert result["mismatched"] == [], f"{case}: {result['mismatched']}"


# --- the worker, run by torchrun on each rank ------------------------------------------------------------------
def _tiny_llama():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)   # the same initial weights on every rank
    return LlamaForCausalLM(LlamaConfig(vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                        num_attention_heads=4, num_key_value_heads=2))


def _compare(saved_folder: Path, expected: dict, before: dict) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    saved = AutoModelForCausalLM.from_pretrained(saved_folder).state_dict()
    return {"mismatched": sorted(set(expected) ^ set(saved)) + [name for name in saved if name in expected
                                                                 and not torch.equal(saved[name], expected[name])],
            "trained": any(not torch.equal(expected[name], before[name]) for name in expected if name in before)}


def _ddp_case(out: Path, tokenizer) -> dict | None:
    import torch
    from datasets import Dataset
    from transformers import Trainer, TrainingArguments

    from progagent_lib.train.ranks import is_main, world_size
    from progagent_lib.train.saving import save_final

    model = _tiny_llama()
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    ids = torch.randint(0, 300, (8, 16), generator=torch.Generator().manual_seed(1)).tolist()
    args = TrainingArguments(output_dir=str(out / "ddp"), max_steps=2, learning_rate=1e-2, per_device_train_batch_size=2,
                             use_cpu=True, report_to="none", save_strategy="no", disable_tqdm=True, logging_steps=1)
    trainer = Trainer(model=model, args=args, train_dataset=Dataset.from_dict({"input_ids": ids, "labels": ids}))
    trainer.train()
    trained = {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}   # DDP: whole on every rank
    save_final(trainer.model_wrapped, tokenizer, out / "ddp" / "final", accelerator=trainer.accelerator)
    if not is_main():
        return None
    return {"ranks": world_size(), "sharded": False, **_compare(out / "ddp" / "final", trained, before)}


def _fsdp2_case(out: Path, tokenizer, lora: bool) -> dict | None:
    import torch
    import torch.distributed as dist
    from torch.distributed.fsdp import fully_shard

    from progagent_lib.train.ranks import is_main, world_size
    from progagent_lib.train.saving import holds_shards, save_final

    model = _tiny_llama()
    before = {k: v.detach().clone() for k, v in model.state_dict().items()}
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"],
                                                 task_type="CAUSAL_LM"))
    for layer in (model.get_base_model() if lora else model).model.layers:
        fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    ids = torch.randint(0, 300, (2, 16), generator=torch.Generator().manual_seed(dist.get_rank()))
    for _ in range(2):
        model(input_ids=ids, labels=ids).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    sharded = holds_shards(model)
    trained = {k: v.full_tensor() for k, v in model.state_dict().items()}   # gathered here, independently of saving
    name = "fsdp2-lora" if lora else "fsdp2"
    save_final(model, tokenizer, out / name / "final")
    if not is_main():
        return None
    if lora:   # expected: W + B @ A * alpha / r on the adapted weights, the gathered weight elsewhere
        merged = {}
        for key, weight in trained.items():
            if ".lora_" in key:
                continue
            plain = key.replace("base_model.model.", "", 1).replace(".base_layer", "")
            if ".base_layer." in key:
                stem = key.replace(".base_layer.weight", "")
                weight = weight + trained[f"{stem}.lora_B.default.weight"] @ trained[f"{stem}.lora_A.default.weight"] * 2.0
            merged[plain] = weight
        trained = merged
    result = _compare(out / name / "final", trained, before)
    if lora:   # allclose: the merge's rounding is peft's, the expectation's is this sum's
        from transformers import AutoModelForCausalLM

        saved = AutoModelForCausalLM.from_pretrained(out / name / "final").state_dict()
        result["mismatched"] = [k for k in saved if not torch.allclose(saved[k], trained[k], atol=1e-6)]
    return {"ranks": world_size(), "sharded": sharded, **result}


def _worker(out: Path) -> None:
    from progagent_lib.generation.tiny_model import train_tokenizer
    from progagent_lib.train.ranks import is_main, partial_state

    partial_state()   # the gloo process group, as the pipeline makes it
    tokenizer = train_tokenizer(["select rows from the table where a < b"] * 8, 300)
    results = {"ddp": _ddp_case(out, tokenizer), "fsdp2": _fsdp2_case(out, tokenizer, lora=False),
               "fsdp2-lora": _fsdp2_case(out, tokenizer, lora=True)}
    if is_main():
        (out / "results.json").write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    _worker(Path(sys.argv[1]))
