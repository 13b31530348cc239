"""The cpu-smoke tiny model: built from a config, tokenizer trained on the pool, save/reload round trip."""
import torch

from progagent_lib.train.models import MARKUP_TOKENS, SPECIAL_TOKENS, TinyModelConfig, build_tiny_model, load_model


def test_tiny_model_round_trip(tmp_path, repo):
    model, tokenizer = build_tiny_model(repo / "tasks", TinyModelConfig(vocab_size=1024), save_to=tmp_path / "tiny")
    assert model.config.model_type == "qwen3"
    # Every Qwen3 control / markup token is one token, so tool calls and turn ends are single ids.
    for token in SPECIAL_TOKENS + MARKUP_TOKENS:
        assert len(tokenizer(token, add_special_tokens=False)["input_ids"]) == 1, token
    messages = [
        {"role": "system", "content": "You solve tasks."},
        {"role": "user", "content": "Restock the shop."},
        {"role": "assistant", "content": "", "tool_calls": [
            {"type": "function", "function": {"name": "claim_done", "arguments": {"action": "done: 12.50"}}}]},
        {"role": "tool", "name": "claim_done", "content": '{"reward": 1}'},
    ]
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    assert '<tool_call>\n{"name": "claim_done"' in text and "<tool_response>" in text
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text  # byte-level: lossless

    reloaded_model, reloaded_tokenizer = load_model(tmp_path / "tiny")
    assert reloaded_tokenizer.chat_template == tokenizer.chat_template
    assert reloaded_tokenizer(text, add_special_tokens=False)["input_ids"] == ids
    batch = torch.tensor([ids[:32]])
    with torch.no_grad():
        assert torch.allclose(model(batch).logits, reloaded_model(batch).logits, atol=1e-6)


def test_tiny_template_is_one_trl_can_train_on(tmp_path, repo):
    from trl.chat_template_utils import get_training_chat_template

    _, tokenizer = build_tiny_model(repo / "tasks", TinyModelConfig(vocab_size=1024))
    # TRL knows the template by its exact text and hands back the variant with assistant-mask markers.
    assert "{% generation %}" in (get_training_chat_template(tokenizer) or "")


def test_load_model_names_missing_folder(tmp_path):
    import pytest

    with pytest.raises(FileNotFoundError, match="config.json"):
        load_model(tmp_path / "nothing-here")
