"""A longer context for a small model: `SOURCE@POSITIONS[:yarn|linear]` writes the RoPE scaling into a model folder's
config.json (issue 21), so transformers, the feasibility check and the engine all read the same scaled model; a
scaling the config cannot express is refused before any compute. On a tiny saved model (no download); the engine
test serves the real small model scaled to 16k with vLLM."""
from __future__ import annotations

import json
import os

import pytest

from progagent_lib.errors import ModelSourceError
from progagent_lib.generation.rope import model_positions, split_context
from progagent_lib.generation.sources import load_model, resolve_model_source

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    from transformers import AutoTokenizer, Qwen3Config, Qwen3ForCausalLM

    from progagent_lib.generation.chat_templates import qwen3_chat_template
    from progagent_lib.generation.tiny_model import train_tokenizer

    folder = tmp_path_factory.mktemp("ctx") / "tiny"
    tokenizer = train_tokenizer(["a scaled context for a small model"] * 3, vocab_size=300)
    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=512,
                         tie_word_embeddings=True, bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    Qwen3ForCausalLM(config).save_pretrained(folder)
    tokenizer.chat_template = qwen3_chat_template()
    tokenizer.save_pretrained(folder)
    assert isinstance(AutoTokenizer.from_pretrained(folder).chat_template, str)
    return folder


def test_the_source_spelling():
    assert split_context("smollm2") == ("smollm2", None, "yarn")
    assert split_context("smollm2@32k") == ("smollm2", 32768, "yarn")
    assert split_context("runs/x/final@16384:linear") == ("runs/x/final", 16384, "linear")
    with pytest.raises(ModelSourceError, match="unknown RoPE scaling 'ntk'"):
        split_context("smollm2@16k:ntk")


@pytest.mark.parametrize("rope", ["linear", "yarn"])
def test_a_scaled_folder_is_the_same_model_with_more_positions(tiny_folder, rope):
    scaled = resolve_model_source(f"{tiny_folder}@2048:{rope}")
    assert scaled == str(tiny_folder.parent / f"tiny-ctx2048-{rope}")
    assert resolve_model_source(f"{tiny_folder}@2k:{rope}") == scaled          # written once, found again
    config = json.loads((tiny_folder.parent / scaled / "config.json").read_text())
    assert config["rope_parameters"]["factor"] == 4.0
    assert config["max_position_embeddings"] == (2048 if rope == "yarn" else 512)   # the conventions of transformers and vLLM
    assert config["rope_parameters"]["rope_type"] == rope
    assert model_positions(config) == 2048
    metadata = json.loads((tiny_folder.parent / scaled / "progagent_model.json").read_text())
    assert metadata["context"]["original_positions"] == 512

    original, _ = load_model(str(tiny_folder))
    model, tokenizer = load_model(f"{tiny_folder}@2048:{rope}")
    assert model_positions(model.config) == 2048
    for name, weight in original.state_dict().items():   # the same weights (linked), only the RoPE differs
        assert torch.equal(weight, model.state_dict()[name]), name
    ids = torch.randint(0, len(tokenizer), (1, 1500))   # past the original 512 positions
    with torch.no_grad():
        scaled_logits = model(ids).logits
        plain_logits = original(ids).logits
    assert torch.isfinite(scaled_logits).all()
    assert not torch.allclose(scaled_logits, plain_logits)   # the scaling is applied, not only written down


def test_a_scaling_the_config_cannot_express_is_refused(tiny_folder, tmp_path):
    with pytest.raises(ModelSourceError, match="already has 512 positions"):
        resolve_model_source(f"{tiny_folder}@512")
    scaled = resolve_model_source(f"{tiny_folder}@1024:linear")
    with pytest.raises(ModelSourceError, match="already scaled"):
        resolve_model_source(f"{scaled}@4096")
    bare = tmp_path / "no_rope"
    bare.mkdir()
    (bare / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_positions": 1024}))
    with pytest.raises(ModelSourceError, match="no RoPE parameters"):
        resolve_model_source(f"{bare}@4096")
    with pytest.raises(ModelSourceError, match="hub id"):
        resolve_model_source("org/model@4096")


def test_the_engine_command_and_feasibility_read_the_scaled_positions(tiny_folder):
    from transformers import AutoConfig

    from progagent_lib.engine.server import EngineServer, served_positions
    from progagent_lib.train.common import model_positions as stage_positions

    scaled = resolve_model_source(f"{tiny_folder}@4096")
    assert served_positions(scaled) == 4096 and served_positions(tiny_folder) == 512
    assert stage_positions(AutoConfig.from_pretrained(scaled)) == 4096
    command = EngineServer(f"{tiny_folder}@4096", 1).command()
    assert command[command.index("--max-model-len") + 1] == "4096"
    assert EngineServer(str(tiny_folder), 1, max_model_len=300).command().count("300") >= 1


@pytest.mark.slow
def test_the_engine_serves_the_small_model_scaled_to_16k():
    """vLLM reads the YaRN scaling from config.json: it accepts a 16,384-token context (it refuses a max_model_len
    above what the config allows) and answers a prompt longer than the model's own 8,192 positions."""
    import httpx

    from progagent_lib.engine import EngineServer, engine_available, free_port

    if not engine_available():   # as tests/engine/test_engine.py: a failure in CI, where `make test` creates it
        if os.environ.get("CI") == "true":
            raise RuntimeError("CI: the engine's venv (.venv-engine) is missing; `make test` creates it (`make engine`)")
        pytest.skip("the engine's venv (.venv-engine) is absent; create it with `make engine`")
    with EngineServer("smollm2@16k", free_port(), kv_cache_gib=1) as server:
        models = httpx.get(f"{server.base_url}/models", headers=server.headers).json()["data"]
        assert models[0]["max_model_len"] == 16384
        prompt = "one two three four five six seven eight nine ten " * 900    # ~9k tokens
        reply = httpx.post(f"{server.base_url}/completions", headers=server.headers, timeout=600,
                           json={"model": server.served_name, "prompt": prompt, "max_tokens": 2, "temperature": 0})
        assert reply.status_code == 200, reply.text
        assert reply.json()["usage"]["prompt_tokens"] > 8192
