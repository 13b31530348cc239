"""The LM head in training (issue 21): what SFT's loss and GSPO's log-probs compute without the full logits.

The fused LM head (train.logits: TRL's, with `TiledLogProbs` on a CPU) gives the log-probs and entropies that the full
(tokens x vocabulary) logits give, and the same gradients, whatever the tile (`logit_chunk_tokens`, here sizes that do
not divide the sequence); `TiledLogProbs` gives what TRL's kernel gives, every optional output, bias, soft cap, scale
and temperature included, and in bf16 is as close to fp64 as transformers' autocast logits; the tile really reaches
the head, in GSPOTrainer's log-probs and in run_sft / run_gspo, which scores only the labelled positions; gradient
checkpointing reaches the model when asked and only then. On the tiny from-scratch model (tied LM head, as
SmolLM2's)."""
import pytest
import torch

from progagent_lib.generation.sources import load_model
from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model
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
    """The positions of every tile the CPU head sees (forward and backward), recorded."""
    from progagent_lib.train import logits as head

    rows = {"forward": [], "backward": []}
    forward, backward = head._forward_tile, head._backward_tile

    def spy_forward(tile, *args, **kwargs):
        rows["forward"].append(tile.shape[0])
        return forward(tile, *args, **kwargs)

    def spy_backward(tile, *args, **kwargs):
        rows["backward"].append(tile.shape[0])
        return backward(tile, *args, **kwargs)

    monkeypatch.setattr(head, "_forward_tile", spy_forward)
    monkeypatch.setattr(head, "_backward_tile", spy_backward)
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
@pytest.mark.parametrize("model_tokens_only", [False, True])
def test_gspo_logps_and_entropies_equal_the_full_logits_with_equal_gradients(tiny_path, tmp_path, tile, tile_rows,
                                                                            model_tokens_only):
    """Every completion token scored (TRL's labels), or only the model's own (`scored`, as the loss and the old
    log-probs ask): equal to the full logits where scored, 0 elsewhere, and the head sees only the scored positions."""
    trainer = gspo_trainer(tiny_path, tmp_path, temperature=0.7)
    model, inputs = trainer.model, episodes(trainer.model.config.vocab_size)
    model.train()
    scored = inputs["completion_mask"] * (inputs["tool_mask"] if model_tokens_only else 1)
    logp_weight = torch.linspace(-1.0, 1.0, COMPLETION).expand(2, -1) * scored    # any loss of both outputs
    entropy_weight = torch.linspace(0.5, -0.3, COMPLETION).expand(2, -1) * scored

    with lm_head_tile(tile):   # the forward and its backward, as run_gspo holds it over training
        logps, entropies, _ = trainer._unpadded_logps_and_entropies(
            model, torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1),
            torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1), COMPLETION, batch_size=1,
            compute_entropy=True, scored=scored if model_tokens_only else None)
        ((logps * logp_weight).sum() + (entropies * entropy_weight).sum()).backward()
    fused = gradients(model)
    full_logps, full_entropies = full_logits_reference(model, inputs, temperature=0.7)
    ((full_logps * logp_weight).sum() + (full_entropies * entropy_weight).sum()).backward()
    full = gradients(model)

    assert logps.shape == entropies.shape == (2, COMPLETION)
    keep = scored.bool()
    torch.testing.assert_close(logps[keep], full_logps[keep], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(entropies[keep], full_entropies[keep], atol=1e-5, rtol=1e-5)
    assert not logps[~keep].any() and not entropies[~keep].any()
    assert fused.keys() == full.keys() and "model.embed_tokens.weight" in fused   # the tied head's gradient
    for name in full:
        torch.testing.assert_close(fused[name], full[name], atol=1e-5, rtol=1e-4, msg=name)
    # The tile reached the head: each row's scored positions (one row per batch_size=1 slice; only its completion's
    # tokens, no prompt or padding position) in tiles of `tile` (TRL's 4,096 when None), the forward's and the
    # backward's alike (the backward visits the rows in reverse).
    expected = []
    for scored_positions in scored.sum(-1).tolist():
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


def test_the_gspo_loss_gives_the_head_only_the_model_tokens(tiny_path, tmp_path, tile_rows):
    """A tool's output is masked out of the loss, so its positions get no label and no head work."""
    trainer = gspo_trainer(tiny_path, tmp_path)
    model, inputs = trainer.model, episodes(trainer.model.config.vocab_size)
    inputs["advantages"] = torch.tensor([0.7, -0.7])
    model.train()
    trainer.current_gradient_accumulation_steps = 1
    with lm_head_tile(None):
        trainer.compute_loss(model, inputs).backward()
    model_tokens = int((inputs["completion_mask"] * inputs["tool_mask"]).sum())
    assert model_tokens < int(inputs["completion_mask"].sum())
    assert tile_rows["forward"] == tile_rows["backward"] == [model_tokens]   # one tile: the micro-batch's two rows


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
    for tile in (None, 16):
        tile_rows["forward"].clear()
        config = SFTRunConfig(model=str(tiny_path), output_dir=str(tmp_path / f"sft-{tile}"),
                              task_ids=["retail/restock_orders"], harnesses=["dtc"], min_score=0.0, max_length=None,
                              max_steps=1, learning_rate=1e-3, logit_chunk_tokens=tile)
        summaries[tile] = run_sft(config, [teacher])
        # only the trained (assistant) positions are scored
        assert max(tile_rows["forward"]) == (16 if tile else min(4096, summaries[tile]["trained_tokens"]))
    assert summaries[None]["trained_tokens"] > 2 * 16
    assert summaries[16]["first_loss"] == pytest.approx(summaries[None]["first_loss"], rel=1e-5)
    before, _ = load_model(summaries[None]["final_model"])
    after, _ = load_model(summaries[16]["final_model"])
    # AdamW divides by the gradient's own size: an element whose gradient is ~0 moves by up to the learning rate on
    # any rounding difference of the summation order; atol is 1% of the learning rate
    for name, weight in before.state_dict().items():
        torch.testing.assert_close(after.state_dict()[name], weight, atol=1e-5, rtol=1e-5, msg=name)


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


def head_outputs(kernel, hidden, weight, bias, targets, bf16, softcap=None, scale=1.0, temperature=0.7):
    """Every output of one head call, and the gradients of a loss of its two differentiable outputs."""
    hidden, weight = hidden.clone().requires_grad_(), weight.clone().requires_grad_()
    bias = None if bias is None else bias.clone().requires_grad_()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        outs = kernel.apply(hidden, weight, bias, targets, temperature, 1000, softcap, scale,
                            ("entropy", "log_sum_sq_probs", "mean_logits", "is_top1"))
    n = hidden.shape[0]
    (outs[0] * torch.linspace(-1, 1, n)).sum().add((outs[1] * torch.linspace(0.5, -0.3, n)).sum()).backward()
    return [o.detach() for o in outs] + [hidden.grad, weight.grad] + ([] if bias is None else [bias.grad])


@pytest.mark.parametrize("bias, softcap, scale", [(False, None, 1.0), (True, 30.0, 0.5)])
def test_the_cpu_head_gives_what_trls_kernel_gives(bias, softcap, scale):
    from trl.kernels import ChunkedLogProbFunction

    from progagent_lib.train.logits import TiledLogProbs

    generator = torch.Generator().manual_seed(0)
    hidden, weight = torch.randn(300, 64, generator=generator), torch.randn(5000, 64, generator=generator) * 0.2
    b = torch.randn(5000, generator=generator) if bias else None
    targets = torch.randint(0, 5000, (300,), generator=generator)
    targets[:5] = (hidden[:5] @ weight.t() + (0 if b is None else b)).argmax(-1)   # some targets are the top-1 token
    with lm_head_tile(128):   # tiles that do not divide the positions
        ours = head_outputs(TiledLogProbs, hidden, weight, b, targets, False, softcap, scale)
        trls = head_outputs(ChunkedLogProbFunction, hidden, weight, b, targets, False, softcap, scale)
    assert ours[4][:5].all() and not ours[4].all()
    assert torch.equal(ours[4], trls[4])
    for name, mine, theirs in zip(["log_probs", "entropy", "log_sum_sq_probs", "mean_logits", "-", "d hidden",
                                   "d weight", "d bias"], ours, trls):
        if name != "-":
            torch.testing.assert_close(mine, theirs, atol=2e-5, rtol=1e-5, msg=name)


def test_the_cpu_head_in_bf16_is_as_close_to_fp64_as_autocast_logits():
    """bf16: the tile's products in bf16 (fp32 softmax), as an autocast linear layer; its error against fp64 is no
    more than 1.5x that of transformers' way (autocast logits, then fp32 log-softmax)."""
    from progagent_lib.train.logits import TiledLogProbs

    generator = torch.Generator().manual_seed(1)
    hidden, weight = torch.randn(300, 64, generator=generator), torch.randn(5000, 64, generator=generator) * 0.2
    targets = torch.randint(0, 5000, (300,), generator=generator)
    with lm_head_tile(128):
        ours = head_outputs(TiledLogProbs, hidden, weight, None, targets, True)

    def full(dtype, bf16):
        h, w = hidden.to(dtype).requires_grad_(), weight.to(dtype).requires_grad_()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            logits = torch.nn.functional.linear(h, w)
        logp = torch.log_softmax(logits.to(dtype) / 0.7, -1)
        logps, entropy = logp.gather(-1, targets[:, None]).squeeze(-1), -(logp.exp() * logp).sum(-1)
        (logps * torch.linspace(-1, 1, 300, dtype=dtype)).sum().add(
            (entropy * torch.linspace(0.5, -0.3, 300, dtype=dtype)).sum()).backward()
        return [logps.detach(), entropy.detach(), h.grad, w.grad]

    exact, autocast = full(torch.float64, False), full(torch.float32, True)
    for name, mine, theirs, truth in zip(["log_probs", "entropy", "d hidden", "d weight"],
                                         [ours[0], ours[1], ours[5], ours[6]], autocast, exact):
        error = float((mine.double() - truth).abs().max() / truth.abs().max())
        reference = float((theirs.double() - truth).abs().max() / truth.abs().max())
        assert 0 < error <= 1.5 * reference + 1e-6, (name, error, reference)
