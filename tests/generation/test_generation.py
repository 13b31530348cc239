"""The generation floor: one generator config read once, one way of choosing a generator, and policies as one chat
adapter over any generator, so a turn is rendered and decoded the same way in `run_episode` and in training."""
import pytest

from progagent_lib.errors import ConfigError
from progagent_lib.generation import (GeneratorConfig, HFTurnGenerator, ReplayTurns, VLLMServerTurnGenerator,
                                      generator_config, make_generator)
from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model
from progagent_lib.harness import Limits, run_episode
from progagent_lib.harness.chat_format import ChatFormat
from progagent_lib.policy import ChatPolicy, OracleTeacher
from progagent_lib.train.rollout import run_token_episode, teacher_scripts

WIDE = Limits(max_tool_calls=100, max_turns=100, max_context_tokens=100_000)


@pytest.fixture(scope="module")
def tiny(repo):
    return build_tiny_model(repo / "tasks", TinyModelConfig(vocab_size=1024, hidden_size=64, intermediate_size=128, head_dim=16))


@pytest.fixture(scope="module")
def chat(tiny):
    return ChatFormat(tiny[1], model_name="tiny")


@pytest.mark.parametrize("settings, backend", [
    ({}, "transformers"),
    ({"engine_url": "http://127.0.0.1:8000/v1"}, "engine"),
    ({"use_vllm": True}, "trl-vllm"),
    ({"vllm_server_base_url": "http://127.0.0.1:8001"}, "trl-vllm"),
])
def test_a_run_configs_generator_settings_become_one_generator_config(settings, backend):
    choice = generator_config(model="smollm2", temperature=0.7, seed=3, **settings)
    assert choice.backend == backend and choice.temperature == 0.7 and choice.seed == 3
    if backend == "engine":
        assert choice.served_model == "smollm2"   # the model's short name, unless engine_model names another


@pytest.mark.parametrize("kwargs, field", [
    ({"backend": "vllm"}, "backend"),
    ({"temperature": -1.0}, "temperature"),
    ({"top_p": 0.0}, "top_p"),
    ({"backend": "engine"}, "url"),
])
def test_bad_generator_configs_name_the_field(kwargs, field):
    with pytest.raises(ConfigError, match=field):
        GeneratorConfig(**kwargs)


def test_two_generators_named_at_once_are_refused():
    with pytest.raises(ConfigError, match="two generators"):
        generator_config(model="smollm2", temperature=1.0, engine_url="http://127.0.0.1:8000/v1", use_vllm=True)


def test_make_generator_builds_what_the_config_names(tiny, chat):
    model, _ = tiny
    hf = make_generator(GeneratorConfig("transformers", temperature=0.0), chat, model=model)
    assert isinstance(hf, HFTurnGenerator) and not hf.do_sample
    engine = make_generator(GeneratorConfig("engine", 0.7, 1, "http://127.0.0.1:9/v1", "tiny"), chat)
    try:
        assert type(engine).__name__ == "EngineTurnGenerator" and engine.stop_token_ids == [chat.end_of_turn]
        assert engine.request_body([[1, 2]], 8)["skip_special_tokens"] is False   # decoded here, by decode_turn
    finally:
        engine.close()
    client = object()
    assert make_generator(GeneratorConfig("trl-vllm"), chat, vllm_client=client).client is client
    assert isinstance(make_generator(GeneratorConfig("trl-vllm"), chat, vllm_client=client), VLLMServerTurnGenerator)
    with pytest.raises(ValueError, match="needs the model"):
        make_generator(GeneratorConfig("transformers"), chat)


@pytest.mark.parametrize("harness", ["dtc", "ptc"])
def test_a_chat_policy_over_replayed_teacher_turns_plays_the_teachers_episode(chat, restock_task, harness):
    """Any generator is a policy through ChatPolicy: replaying the teacher's tokens through `run_episode` gives the
    teacher's episode back, and so does the token rollout of training over the same tokens (one render, one decode)."""
    teacher = run_episode(restock_task, "v0", 0, harness, OracleTeacher(harness), WIDE)
    scripts = teacher_scripts(chat, [teacher])
    replayed = run_episode(restock_task, "v0", 0, harness, ChatPolicy(ReplayTurns(scripts), chat, max_new_tokens=4096),
                           WIDE)
    rollout = run_token_episode(restock_task, "v0", 0, harness, chat, ReplayTurns(scripts), WIDE).trajectory
    assert (teacher.reward, teacher.end_reason) == (1.0, "claim_done")
    for t in (replayed, rollout):
        assert (t.reward, t.end_reason, t.tool_calls, t.turns) == (1.0, "claim_done", teacher.tool_calls, teacher.turns)
        assert [m.get("content") for m in t.messages if m["role"] == "tool"] == \
               [m.get("content") for m in teacher.messages if m["role"] == "tool"]


def test_a_seeded_transformers_generator_replays_its_samples(tiny, chat):
    model, _ = tiny
    prompt = chat.prompt_ids([{"role": "user", "content": "List the products."}], None)
    first = make_generator(GeneratorConfig("transformers", 1.0, seed=7, top_p=0.9), chat, model=model)([prompt], 12)[0]
    again = make_generator(GeneratorConfig("transformers", 1.0, seed=7, top_p=0.9), chat, model=model)([prompt], 12)[0]
    assert first.token_ids == again.token_ids and len(first.logprobs) == len(first.token_ids)
