"""A group's prompt computed once per optimizer step (`train.shared_prompt`): the episodes' log-probs, entropies and
the weights' gradients equal those of whole-episode passes, for a tiny model of the real architecture (fp32, so the
comparison is tight); the trainer uses it where it applies and runs episodes whole elsewhere."""
import pytest
import torch

from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model
from progagent_lib.train.shared_prompt import SharedPrompts


@pytest.fixture(scope="module")
def model(repo):
    from trl.trainer.utils import add_fused_lm_head

    model, _ = build_tiny_model(repo / "tasks", TinyModelConfig(vocab_size=512, hidden_size=64, intermediate_size=128,
                                                                 num_hidden_layers=2, head_dim=16))
    add_fused_lm_head(model, outputs=("log_probs", "entropy"))
    return model.float().train()


def episodes(prompt_length=48, completions=(20, 33, 27)):
    gen = torch.Generator().manual_seed(0)
    prompt = torch.randint(5, 500, (prompt_length,), generator=gen)
    return [torch.cat([prompt, torch.randint(5, 500, (n,), generator=gen)]).unsqueeze(0) for n in completions]


def labels_of(ids, keep):
    labels = ids.clone()
    labels[:, :-keep] = -100
    return labels


def run(model, shared):
    """Each episode's completion log-probs and entropies, and the weights' gradient of a loss over all of them."""
    model.zero_grad()
    prompts = SharedPrompts()
    outs = []
    for ids in episodes():
        keep = ids.size(1) - 48
        mask = torch.ones_like(ids)
        if shared:
            out = prompts.forward(model, ids, mask, labels_of(ids, keep), keep, lambda: torch.autocast("cpu", enabled=False))
            assert out is not None
        else:
            out = model(input_ids=ids, attention_mask=mask, labels=labels_of(ids, keep), fused_lm_head=True)
        log_probs, entropy = out.log_probs[:, -keep:], out.entropy[:, -keep:]
        weights = torch.linspace(-1.0, 1.0, keep)  # a loss that weighs positions differently, as advantages do
        ((log_probs * weights).sum() + 0.1 * entropy.sum()).backward()
        outs.append((log_probs.detach(), entropy.detach()))
    prompts.backward()
    return outs, {name: p.grad.clone() for name, p in model.named_parameters() if p.grad is not None}, prompts


def test_shared_prompt_gives_the_whole_episode_log_probs_and_gradients(model):
    whole, whole_grads, _ = run(model, shared=False)
    shared, shared_grads, prompts = run(model, shared=True)
    for (a_lp, a_ent), (b_lp, b_ent) in zip(whole, shared):
        assert torch.allclose(a_lp, b_lp, atol=1e-5) and torch.allclose(a_ent, b_ent, atol=1e-5)
    assert whole_grads.keys() == shared_grads.keys()
    for name in whole_grads:
        assert torch.allclose(whole_grads[name], shared_grads[name], atol=1e-5, rtol=1e-4), name
    assert prompts.prompt_tokens_saved == 2 * 47  # the 2nd and 3rd episodes did not recompute the prompt


def test_without_gradients_it_gives_the_whole_episode_log_probs(model):
    """The old log-probs' pass (no gradient) shares the prompt too: the same log-probs as whole passes."""
    prompts, off = SharedPrompts(), lambda: torch.autocast("cpu", enabled=False)
    with torch.no_grad():
        for ids in episodes():
            keep, mask = ids.size(1) - 48, torch.ones_like(ids)
            whole = model(input_ids=ids, attention_mask=mask, labels=labels_of(ids, keep), fused_lm_head=True)
            shared = prompts.forward(model, ids, mask, labels_of(ids, keep), keep, off)
            assert torch.allclose(whole.log_probs[:, -keep:], shared.log_probs[:, -keep:], atol=1e-5)
    assert prompts.prompt_tokens_saved == 2 * 47


def test_under_lora_the_adapters_get_the_whole_episode_gradients(model):
    """Through peft's wrapper (GSPO's LoRA): the prompt runs through the adapted backbone once, and the adapters'
    gradients (the only ones) equal those of whole-episode passes."""
    import copy

    from peft import LoraConfig, get_peft_model

    adapted = get_peft_model(copy.deepcopy(model), LoraConfig(r=4, lora_alpha=8, target_modules="all-linear"))
    for name, weight in adapted.named_parameters():   # B starts at 0: move it, so that A's gradient is not 0 too
        if "lora_B" in name:
            torch.nn.init.normal_(weight, std=0.05, generator=torch.Generator().manual_seed(len(name)))
    whole, whole_grads, _ = run(adapted, shared=False)
    shared, shared_grads, prompts = run(adapted, shared=True)
    for (a_lp, _), (b_lp, _) in zip(whole, shared):
        assert torch.allclose(a_lp, b_lp, atol=1e-5)
    assert whole_grads.keys() == shared_grads.keys() and all("lora_" in name for name in whole_grads)
    for name in whole_grads:
        assert torch.allclose(whole_grads[name], shared_grads[name], atol=1e-5, rtol=1e-4), name
    assert prompts.prompt_tokens_saved == 2 * 47


def test_it_does_not_apply_to_a_batch_a_short_prompt_or_padding(model):
    prompts = SharedPrompts()
    off = lambda: torch.autocast("cpu", enabled=False)  # noqa: E731
    two = torch.cat(episodes(completions=(20, 20)))
    assert prompts.forward(model, two, torch.ones_like(two), labels_of(two, 20), 20, off) is None
    short = episodes(prompt_length=8)[0]
    assert prompts.forward(model, short, torch.ones_like(short), labels_of(short, 20), 20, off) is None
    padded = episodes()[0]
    mask = torch.ones_like(padded)
    mask[0, 0] = 0
    assert prompts.forward(model, padded, mask, labels_of(padded, 20), 20, off) is None
