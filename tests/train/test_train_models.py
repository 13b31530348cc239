"""Models: the tiny model (built from a config, tokenizer trained on the pool, save/reload round trip) and the model
sources (the registered smollm2 converted from its GGUF file, GGUF paths, chat-template choice, errors)."""
import torch

from progagent_lib.generation.chat_templates import qwen3_chat_template
from progagent_lib.generation.model_folder import save_model
from progagent_lib.generation.sources import load_model
from progagent_lib.generation.tiny_model import (MARKUP_TOKENS, PAD_TOKEN, TinyModelConfig, build_tiny_model,
                                                 control_tokens)


def test_tiny_model_round_trip(tmp_path, repo):
    model, tokenizer = build_tiny_model(repo / "tasks", TinyModelConfig(vocab_size=1024), save_to=tmp_path / "tiny")
    assert model.config.model_type == "qwen3"
    # Every Qwen3 control / markup token is one token, so tool calls and turn ends are single ids.
    for token in [PAD_TOKEN, *control_tokens(qwen3_chat_template()), *MARKUP_TOKENS]:
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


# ---- model sources: the registered pretrained model (a real GGUF conversion, once per test session) ----

import json as _json
import os as _os

import pytest as _pytest


@_pytest.fixture(scope="module")
def smollm2(tmp_path_factory):
    """Converts the shipped GGUF into a fresh cache, so the conversion itself is tested; ~30 s once."""
    _pytest.importorskip("gguf")
    from progagent_lib.generation.sources import REGISTERED_MODELS, resolve_model_source

    try:
        REGISTERED_MODELS["smollm2"].gguf_path()
    except Exception as exc:  # the wheel is part of `make install`; say so rather than fail obscurely
        if _os.environ.get("CI") == "true":  # in CI a missing install step is a failure, not a skip
            raise
        _pytest.skip(str(exc))
    previous = _os.environ.get("PROGAGENT_CACHE")
    _os.environ["PROGAGENT_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    try:
        yield resolve_model_source("smollm2")
    finally:
        if previous is None:
            _os.environ.pop("PROGAGENT_CACHE", None)
        else:
            _os.environ["PROGAGENT_CACHE"] = previous


def test_smollm2_converts_once_into_a_plain_folder_with_its_template_recorded(smollm2):
    from pathlib import Path

    from progagent_lib.generation.chat_templates import qwen3_chat_template
    from progagent_lib.generation.model_folder import model_metadata
    from progagent_lib.generation.sources import resolve_model_source

    folder = Path(smollm2)
    assert folder.parent == Path(_os.environ["PROGAGENT_CACHE"]).resolve() / "models" and folder.name.startswith("smollm2-")
    assert {"config.json", "model.safetensors", "progagent_model.json"} <= {p.name for p in folder.iterdir()}
    assert "quantization_config" not in _json.loads((folder / "config.json").read_text())
    assert [p.name for p in folder.parent.iterdir()] == [folder.name]  # no temporary folder left behind
    # The template is TRL's Qwen3 one byte for byte (TRL recognises it by its text).
    assert (folder / "chat_template.jinja").read_text(encoding="utf-8") == qwen3_chat_template()
    meta = model_metadata(folder)
    assert meta["registered_name"] == "smollm2" and meta["source"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert meta["chat_template"]["name"] == "qwen3" and len(meta["chat_template"]["sha256"]) == 64
    assert meta["conversion"]["from"] == "gguf" and meta["conversion"]["dtype"] == "float32"
    assert 130e6 < meta["conversion"]["parameters"] < 140e6
    # Made once: a second resolution reuses the folder (the GGUF file's own path too).
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    assert resolve_model_source("smollm2") == smollm2 == resolve_model_source(meta["source"])
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp


def test_converted_weights_are_the_gguf_weights(smollm2):
    import torch
    from transformers import AutoModelForCausalLM

    from progagent_lib.generation.sources import REGISTERED_MODELS, load_model

    gguf = REGISTERED_MODELS["smollm2"].gguf_path()
    direct = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    model, _ = load_model("smollm2")
    ids = torch.tensor([[1, 9690, 198, 2683, 359, 2]])
    with torch.no_grad():
        assert torch.allclose(direct(ids).logits, model(ids).logits, atol=1e-5)


def test_smollm2_renders_tools_and_generates_until_end_of_turn(smollm2):
    import torch
    from trl.chat_template_utils import get_training_chat_template

    from progagent_lib.generation.chat_templates import end_of_turn_token
    from progagent_lib.generation.sources import load_model

    model, tokenizer = load_model("smollm2")
    assert tokenizer.convert_tokens_to_ids(["<|im_start|>", "<|im_end|>"]) == [1, 2]
    assert end_of_turn_token(tokenizer) == "<|im_end|>" and model.generation_config.eos_token_id == 2
    assert tokenizer.pad_token is not None and tokenizer.pad_token_id != 2  # padding is not "end of turn"
    assert model.progagent_metadata["registered_name"] == "smollm2"
    tools = [{"type": "function", "function": {"name": "list_products", "description": "One page of products.",
                                               "parameters": {"type": "object", "properties": {"page": {"type": "integer"}}}}}]
    messages = [{"role": "system", "content": "You run a shop."}, {"role": "user", "content": "What do we sell?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"type": "function", "function": {"name": "list_products", "arguments": {"page": 1}}}]},
                {"role": "tool", "name": "list_products", "content": '{"items": [{"id": "P1"}], "has_more": false}'}]
    text = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
    assert '"name": "list_products"' in text and "<tool_call>" in text and "<tool_response>" in text
    ids = tokenizer.encode(text, add_special_tokens=False)
    assert ids[0] == 1 and ids.count(2) == 4  # system, user, assistant, tool: each closed by <|im_end|>
    with torch.no_grad():
        out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                             max_new_tokens=4, do_sample=False)
    assert out.shape[1] > len(ids)
    assert "{% generation %}" in (get_training_chat_template(tokenizer) or "")


def test_hf_policy_takes_the_registered_name(smollm2):
    from progagent_lib.policy import make_policy

    policy = make_policy("hf:smollm2", "ptc", max_new_tokens=2, temperature=0)
    assert policy.name == "hf:smollm2" and policy.model_metadata["chat_template"]["name"] == "qwen3"
    assert policy.tokenizer.convert_tokens_to_ids("<|im_end|>") == 2


def test_unknown_names_and_files_that_are_not_gguf_are_refused_by_name(tmp_path):
    from progagent_lib.errors import ModelSourceError
    from progagent_lib.generation.sources import registered_models, resolve_model_source

    assert "smollm2" in registered_models() and registered_models()["smollm2"].license == "Apache-2.0"
    with _pytest.raises(ModelSourceError, match="unknown model 'smolm2'.*smollm2"):
        resolve_model_source("smolm2")
    text = tmp_path / "weights.gguf"
    text.write_text("not a model")
    with _pytest.raises(ModelSourceError, match="weights.gguf.*not a GGUF file"):
        resolve_model_source(str(text))
    with _pytest.raises(ModelSourceError, match="does not exist"):
        resolve_model_source(str(tmp_path / "missing.gguf"))
    torn = tmp_path / "torn.gguf"
    torn.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 64)  # a header cut short
    _os.environ["PROGAGENT_CACHE"], previous = str(tmp_path / "cache"), _os.environ.get("PROGAGENT_CACHE")
    try:
        with _pytest.raises(ModelSourceError, match="torn.gguf"):
            resolve_model_source(str(torn))
    finally:
        _os.environ["PROGAGENT_CACHE"] = previous


def test_chat_template_is_chosen_explicitly_and_a_missing_one_is_named(tmp_path, repo):
    from progagent_lib.errors import ModelSourceError
    from progagent_lib.generation.chat_templates import qwen3_chat_template
    from progagent_lib.generation.model_folder import model_metadata

    model, tokenizer = build_tiny_model(repo / "tasks", TinyModelConfig(vocab_size=600, num_hidden_layers=1),
                                        corpus=["a few words of text"] * 20)
    tokenizer.chat_template = None
    save_model(model, tokenizer, tmp_path / "bare")
    with _pytest.raises(ModelSourceError, match="bare.*no chat template.*chat_template="):
        load_model(tmp_path / "bare")
    loaded, loaded_tokenizer = load_model(tmp_path / "bare", chat_template="qwen3")
    assert loaded_tokenizer.chat_template == qwen3_chat_template()
    assert loaded.progagent_metadata["chat_template"]["name"] == "qwen3"
    assert loaded.generation_config.eos_token_id == loaded_tokenizer.convert_tokens_to_ids("<|im_end|>")
    jinja = tmp_path / "plain.jinja"
    jinja.write_text("{% for m in messages %}<|im_start|>{{ m.content }}<|im_end|>{% endfor %}")
    _, custom = load_model(tmp_path / "bare", chat_template=str(jinja))
    assert custom.chat_template == jinja.read_text()
    with _pytest.raises(ModelSourceError, match="unknown chat template 'llama'"):
        load_model(tmp_path / "bare", chat_template="llama")
    # A saved folder without progagent_model.json: the template is still recognised and recorded.
    save_model(loaded, loaded_tokenizer, tmp_path / "saved")
    assert model_metadata(tmp_path / "saved")["chat_template"]["name"] == "qwen3"
