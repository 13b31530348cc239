"""The local transformers policy on a tiny random Qwen3 model: it fails the task (expected), but every
episode ends cleanly, malformed calls become error observations, and well-formed calls reach the tools.

`HFPolicy` is `ChatPolicy` over `HFTurnGenerator`: a turn is read by `decode_turn`, as in training, so a turn that
runs out of tokens before its end-of-turn token is cut (the episode ends `turn_cut`). The tests that need turns to
end use the same random model with its end-of-turn logit raised (`ending`), so every turn ends at once."""
import pytest

from progagent_lib.harness import Limits, run_episode


@pytest.fixture(scope="module")
def tiny(restock_task):
    torch = pytest.importorskip("torch")
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from progagent_lib.harness.spec import PROMPTS
    from progagent_lib.generation.tiny_model import train_tokenizer

    # A byte-level BPE with Qwen3's special tokens and chat template, trained here on a few of our texts.
    texts = [p.read_text() for p in PROMPTS.glob("*.md")] + [restock_task.prompt, str(restock_task.tool_schemas())] * 3
    tokenizer = train_tokenizer(texts, vocab_size=600)
    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=8192,
                         tie_word_embeddings=True, bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    return Qwen3ForCausalLM(config), tokenizer


@pytest.fixture(scope="module")
def ending(tiny):
    """The random model, with the end-of-turn token's logit raised by a hook: each turn ends after its prefill."""
    import copy

    from progagent_lib.harness.chat_format import ChatFormat

    model, tokenizer = tiny
    model = copy.deepcopy(model)
    eot = ChatFormat(tokenizer).end_of_turn

    def raise_end_of_turn(module, inputs, output):
        output[..., eot] += 1e4
        return output

    model.lm_head.register_forward_hook(raise_end_of_turn)
    return model, tokenizer


def policy(tiny, **kwargs):
    from progagent_lib.policy import HFPolicy

    model, tokenizer = tiny
    return HFPolicy(model, tokenizer, temperature=0, **kwargs)


@pytest.mark.parametrize("harness", ["dtc", "ptc"])
def test_random_model_episodes_end_cleanly(tiny, restock_task, harness):
    t = run_episode(restock_task, "v0", 0, harness, policy(tiny, max_new_tokens=24), Limits(max_turns=3))
    assert t.end_reason in ("no_tool_call", "max_turns", "turn_cut") and 1 <= t.turns <= 3
    assert t.reward == 0.0 and t.criteria  # judged, and failed
    assert t.token_counter.startswith("tokenizer:")
    assert t.context_tokens > 500  # the system prompt and tool schemas alone, counted by the model's tokenizer


def test_a_turn_that_runs_out_of_tokens_is_cut_as_in_training(tiny, restock_task):
    t = run_episode(restock_task, "v0", 0, "dtc", policy(tiny, max_new_tokens=12), Limits(max_turns=3))
    assert t.end_reason == "turn_cut" and t.turns == 1 and t.tool_calls == 0   # recorded, nothing run
    assert t.messages[-1]["role"] == "assistant" and t.messages[-1]["content"]


def test_malformed_generations_become_error_observations_and_the_episode_goes_on(ending, restock_task):
    # Prefill an opened call that the turn then ends: every turn is a malformed call.
    prefix = '<tool_call>\n{"name": "list_products", "arguments": {"page": '
    t = run_episode(restock_task, "v0", 0, "dtc", policy(ending, max_new_tokens=16, response_prefix=prefix), Limits(max_turns=3))
    assert t.end_reason == "max_turns" and t.turns == 3
    assert t.malformed_calls == 3 and all(c.kind == "malformed" and c.is_error for c in t.calls)
    assert t.tool_calls == 0 and "could not be read" in t.calls[0].observation


def test_well_formed_generated_call_runs_against_the_environment(ending, restock_task):
    prefix = '<tool_call>\n{"name": "list_products", "arguments": {"page": 2}}\n</tool_call>'
    t = run_episode(restock_task, "v0", 0, "dtc", policy(ending, max_new_tokens=8, response_prefix=prefix), Limits(max_turns=2))
    assert t.end_reason == "max_turns" and t.tool_calls == 2
    first = t.calls[0]
    assert first.name == "list_products" and not first.is_error and '"page": 2' in first.observation
    assert t.messages[2]["tool_calls"][0]["function"]["name"] == "list_products"


def test_policy_spec_loads_a_saved_model(tiny, tmp_path, restock_task):
    from progagent_lib.policy import make_policy

    model, tokenizer = tiny
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    loaded = make_policy(f"hf:{tmp_path / 'm'}", "dtc", max_new_tokens=8, temperature=0)
    assert loaded.name == f"hf:{tmp_path / 'm'}"
    t = run_episode(restock_task, "v0", 0, "dtc", loaded, Limits(max_turns=1))
    assert t.turns == 1 and t.policy == loaded.name
    with pytest.raises(FileNotFoundError, match="config.json"):
        make_policy(f"hf:{tmp_path / 'missing'}", "dtc")


def test_teacher_tokens_can_be_counted_with_a_model_tokenizer(tiny, restock_task):
    from progagent_lib.policy import OracleTeacher

    _, tokenizer = tiny
    approx = run_episode(restock_task, "v0", 0, "ptc", OracleTeacher("ptc"))
    exact = run_episode(restock_task, "v0", 0, "ptc", OracleTeacher("ptc"), tokenizer=tokenizer)
    assert approx.token_counter == "approx-bpe" and exact.token_counter.startswith("tokenizer:")
    expected = sum(len(tokenizer.encode(m["content"], add_special_tokens=False)) for m in exact.messages if m["role"] == "tool")
    assert exact.tool_output_tokens == expected != approx.tool_output_tokens


def test_progagent_run_with_a_local_model(tiny, tmp_path, capsys, restock_task):
    from progagent_lib.cli import main
    from progagent_lib.harness import read_jsonl

    model, tokenizer = tiny
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    out = tmp_path / "model.jsonl"
    code = main(["run", "--tasks", str(restock_task.root), "--harness", "dtc,ptc", "--policy", f"hf:{tmp_path / 'm'}",
                 "--policy-arg", "temperature=0", "--policy-arg", "max_new_tokens=8", "--max-turns", "2",
                 "--samples", "2", "--out", str(out), "--no-progress"])
    assert code == 0
    runs = read_jsonl(out)
    assert len(runs) == 4 and all(t.reward == 0.0 and t.end_reason in ("no_tool_call", "max_turns", "turn_cut") for t in runs)
    assert "pass@2" in capsys.readouterr().out
