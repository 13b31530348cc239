"""The LM head in training (issue 21): what SFT's loss and GSPO's log-probs compute without the full logits.

TRL's fused LM head (train.logits) gives the log-probs and entropies that the full (tokens x vocabulary) logits give,
and the same gradients, whatever the tile (`logit_chunk_tokens`, here sizes that do not divide the sequence); the tile
really reaches TRL's kernel, in GSPOTrainer's log-probs and in run_sft / run_gspo; gradient checkpointing reaches the
model when asked and only then. On the tiny from-scratch model (tied LM head, as SmolLM2's)."""
import pytest
import torch

from progagent_lib.generation.models import TinyModelConfig, build_tiny_model, load_model
from progagent_lib.train import gspo as gspo_module
from progagent_lib.train.gspo import GSPORunConfig, grpo_args, run_gspo
from progagent_lib.train.logits import lm_head_tile, trl_tile_tokens
from progagent_lib.train.sft import SFTRunConfig, run_sft, sft_args

TINY = TinyModelConfig(vocab_size=1024, hidden_size=64, intermediate_size=128, head_dim=16)
PROMPT, COMPLETION = 5, 13   # 17 scored positions per row: no tile size below divides it


@pytest.fixture(scope="module")
def tiny_path(repo, tmp_path_factory):
    path = tmp_path_factory.mktemp("tiny")
    build_tiny_model(repo / "tasks", TINY, save_to=path)
    return path


def alternating_reward(prompts, completions, verifier_reward, **_):
    return [float(index % 2) for index in range(len(prompts))]


@pytest.fixture
def tile_rows(monkeypatch):
    """The positions of every tile TRL's CPU fold sees (forward and backward), recorded."""
    from trl.kernels import chunked_logprob

    rows = {"forward": [], "backward": []}
    forward, backward = chunked_logprob._forward_tile, chunked_logprob._backward_tile

    def spy_forward(tile, *args, **kwargs):
        rows["forward"].append(tile.shape[0])
        return forward(tile, *args, **kwargs)

    def spy_backward(tile, *args, **kwargs):
        rows["backward"].append(tile.shape[0])
        return backward(tile, *args, **kwargs)

    monkeypatch.setattr(chunked_logprob, "_forward_tile", spy_forward)
    monkeypatch.setattr(chunked_logprob, "_backward_tile", spy_backward)
    return rows


def gspo_trainer(tiny_path, tmp_path, temperature=1.0, **config):
    from datasets import Dataset

    from progagent_lib.train.gspo_trainer import GSPOTrainer

    model, tokenizer = load_model(str(tiny_path))
    args = grpo_args(GSPORunConfig(output_dir=str(tmp_path), num_generations=2, temperature=temperature, **config))
    return GSPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[alternating_reward], args=args,
                       train_dataset=Dataset.from_list([{"prompt": [{"role": "user", "content": "x"}]}] * 2))


def episodes(vocab: int) -> dict:
    generator = torch.Generator().manual_seed(0)
    return {"prompt_ids": torch.randint(0, vocab, (2, PROMPT), generator=generator),
            "prompt_mask": torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]]),            # left padding
            "completion_ids": torch.randint(0, vocab, (2, COMPLETION), generator=generator),
            "completion_mask": torch.tensor([[1] * COMPLETION, [1] * 10 + [0] * 3]),     # right padding
            "tool_mask": torch.tensor([[1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1], [1] * COMPLETION])}


def full_logits_reference(model, inputs, temperature):
    """Log-probs and entropies of the completion tokens from the whole logits (what the fused head replaces)."""
    input_ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
    mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
    logits = model(input_ids=input_ids, attention_mask=mask).logits[:, -COMPLETION - 1:-1] / temperature
    logps = torch.log_softmax(logits.float(), -1)
    entropy = -(logps.exp() * logps).sum(-1)
    return logps.gather(-1, inputs["completion_ids"].unsqueeze(-1)).squeeze(-1), entropy


def gradients(model) -> dict[str, torch.Tensor]:
    grads = {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}
    model.zero_grad(set_to_none=True)
    return grads


@pytest.mark.parametrize("tile", [None, 4, 7])
def test_gspo_logps_and_entropies_equal_the_full_logits_with_equal_gradients(tiny_path, tmp_path, tile, tile_rows):
    trainer = gspo_trainer(tiny_path, tmp_path, temperature=0.7)
    model, inputs = trainer.model, episodes(trainer.model.config.vocab_size)
    model.train()
    scored = inputs["completion_mask"].float()
    logp_weight = torch.linspace(-1.0, 1.0, COMPLETION).expand(2, -1) * scored    # any loss of both outputs
    entropy_weight = torch.linspace(0.5, -0.3, COMPLETION).expand(2, -1) * scored

    with lm_head_tile(tile):   # the forward and its backward, as run_gspo holds it over training
        logps, entropies, _ = trainer._get_per_token_logps_and_entropies(
            model, torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1),
            torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1), COMPLETION, batch_size=1,
            compute_entropy=True)
        ((logps * logp_weight).sum() + (entropies * entropy_weight).sum()).backward()
    fused = gradients(model)
    full_logps, full_entropies = full_logits_reference(model, inputs, temperature=0.7)
    ((full_logps * logp_weight).sum() + (full_entropies * entropy_weight).sum()).backward()
    full = gradients(model)

    assert logps.shape == entropies.shape == (2, COMPLETION)
    keep = inputs["completion_mask"].bool()
    torch.testing.assert_close(logps[keep], full_logps[keep], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(entropies[keep], full_entropies[keep], atol=1e-5, rtol=1e-5)
    assert fused.keys() == full.keys() and "model.embed_tokens.weight" in fused   # the tied head's gradient
    for name in full:
        torch.testing.assert_close(fused[name], full[name], atol=1e-5, rtol=1e-4, msg=name)
    # The tile reached TRL's kernel: each row's scored positions (one row per batch_size=1 slice, cut to the row's
    # own tokens: GSPOTrainer drops the padding columns) in tiles of `tile` (TRL's 4,096 when None), the forward's
    # and the backward's alike (the backward visits the rows in reverse).
    mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
    expected = []
    for row in mask:
        used = row.nonzero()
        width = max(int(used[-1]) + 1, PROMPT + 1) - min(int(used[0]), PROMPT)
        scored_positions = width - 1
        expected += [min(tile or 4096, scored_positions - start) for start in range(0, scored_positions, tile or 4096)]
    assert tile_rows["forward"] == expected
    assert sorted(tile_rows["backward"]) == sorted(expected)
    assert trl_tile_tokens() == 4096   # restored


def test_gspo_loss_and_its_gradient_are_the_same_with_small_tiles(tiny_path, tmp_path):
    trainer = gspo_trainer(tiny_path, tmp_path)
    model, inputs = trainer.model, episodes(trainer.model.config.vocab_size)
    inputs["advantages"] = torch.tensor([0.7, -0.7])
    with torch.no_grad():
        logps, _, _ = trainer._get_per_token_logps_and_entropies(
            model, torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1),
            torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1), COMPLETION, batch_size=1)
        inputs["old_per_token_logps"] = logps + 0.05   # off-policy: the ratio is not 1
    model.train()
    trainer.current_gradient_accumulation_steps = 1
    results = []
    for tile in (None, 6):
        with lm_head_tile(tile):
            loss = trainer.compute_loss(model, inputs)
            loss.backward()
        results.append((loss.detach(), gradients(model)))
    (loss, grads), (tiled_loss, tiled_grads) = results
    assert loss != 0
    torch.testing.assert_close(tiled_loss, loss, atol=1e-6, rtol=1e-5)
    for name in grads:
        torch.testing.assert_close(tiled_grads[name], grads[name], atol=1e-6, rtol=1e-4, msg=name)


def test_a_bad_tile_is_refused_and_the_tile_is_restored_after_an_error():
    with pytest.raises(ValueError, match="logit_chunk_tokens=0"):
        with lm_head_tile(0):
            pass
    with pytest.raises(RuntimeError, match="inside"):
        with lm_head_tile(8):
            assert trl_tile_tokens() == 8
            raise RuntimeError("inside")
    assert trl_tile_tokens() == 4096


@pytest.mark.parametrize("checkpointing", [False, True])
def test_gradient_checkpointing_reaches_the_model_only_when_asked(tiny_path, tmp_path, checkpointing):
    """TRL's configs default to checkpointing on; the run configs' switch decides, for SFT and for GSPO. Trainer.train
    enables it on the model before the first step: seen there, then the run is stopped."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import SFTTrainer

    class Stop(Exception):
        pass

    seen = []

    class SeeTheModel(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kwargs):
            seen.append(model.is_activation_checkpointing)
            raise Stop

    model, tokenizer = load_model(str(tiny_path))
    sft = SFTTrainer(model=model, args=sft_args(SFTRunConfig(output_dir=str(tmp_path / "sft"), max_steps=1,
                                                              gradient_checkpointing=checkpointing)),
                     train_dataset=Dataset.from_list([{"input_ids": [1, 2, 3], "assistant_masks": [0, 1, 1]}]),
                     processing_class=tokenizer, callbacks=[SeeTheModel()])
    gspo = gspo_trainer(tiny_path, tmp_path / "gspo", gradient_checkpointing=checkpointing)
    gspo.add_callback(SeeTheModel())
    for trainer in (sft, gspo):
        with pytest.raises(Stop):
            trainer.train()
    assert seen == [checkpointing, checkpointing]


@pytest.fixture(scope="module")
def teacher(restock_task):
    from progagent_lib.harness.episode import Limits, run_episode
    from progagent_lib.policy import OracleTeacher

    # its first turn only: a short conversation, the step cheap
    return run_episode(restock_task, "v0", 0, "dtc", OracleTeacher("dtc"), Limits(max_turns=1, max_tool_calls=None,
                                                                                  max_context_tokens=None))


def test_one_sft_step_is_the_same_with_small_tiles(tiny_path, teacher, tmp_path, repo, monkeypatch, tile_rows):
    monkeypatch.chdir(repo)
    summaries = {}
    for tile in (None, 64):
        tile_rows["forward"].clear()
        config = SFTRunConfig(model=str(tiny_path), output_dir=str(tmp_path / f"sft-{tile}"),
                              task_ids=["retail/restock_orders"], harnesses=["dtc"], min_score=0.0, max_length=None,
                              max_steps=1, learning_rate=1e-3, logit_chunk_tokens=tile)
        summaries[tile] = run_sft(config, [teacher])
        assert max(tile_rows["forward"]) == (64 if tile else min(4096, summaries[tile]["tokens"] - 1))
    assert summaries[None]["tokens"] > 2 * 64
    assert summaries[64]["first_loss"] == pytest.approx(summaries[None]["first_loss"], rel=1e-5)
    before, _ = load_model(summaries[None]["final_model"])
    after, _ = load_model(summaries[64]["final_model"])
    for name, weight in before.state_dict().items():
        torch.testing.assert_close(after.state_dict()[name], weight, atol=1e-6, rtol=1e-5, msg=name)


@pytest.mark.slow
def test_one_gspo_step_is_the_same_with_small_tiles(tiny_path, tmp_path, repo, monkeypatch, tile_rows):
    monkeypatch.chdir(repo)
    monkeypatch.setattr(gspo_module, "verifier_reward", alternating_reward)
    lines = {}
    for tile in (None, 8):
        tile_rows["forward"].clear()
        config = GSPORunConfig(model=str(tiny_path), output_dir=str(tmp_path / f"gspo-{tile}"), tasks_root="tasks",
                               task_ids=["retail/restock_orders"], harness="dtc", scales=["v0"], train_seeds=[0],
                               num_generations=2, num_iterations=1, max_steps=1, save_steps=1, max_turns=2,
                               max_new_tokens=16, max_context_tokens=4096, learning_rate=1e-3,
                               logit_chunk_tokens=tile)
        lines[tile] = run_gspo(config, resume=False)["dynamics"][0]
        assert max(tile_rows["forward"]) == 8 if tile else max(tile_rows["forward"]) > 8
    assert lines[None]["skipped"] is False and lines[None]["episode_length_tokens"] > 8
    for key in ("loss", "grad_norm", "entropy", "logp_mismatch_max", "episode_length_tokens"):
        assert lines[8][key] == pytest.approx(lines[None][key], rel=1e-4, abs=1e-6), key
