"""The token adapter (GSPO rollouts, evaluation): env_mask covers exactly the environment's tokens, which come
from the chat template; claim_done ends the episode; budgets end it as the message loop does.

The model side is scripted (a test double that emits fixed assistant turns as tokens) so the test controls
which tool calls happen; the tokenizer, chat template, harness session, task environment and verifier are real.
"""
import json

import pytest

from progagent_lib.harness import Limits
from progagent_lib.harness.chat_format import ChatFormat
from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model
from progagent_lib.generation import HFTurnGenerator, ReplayTurns, TurnOutput
from progagent_lib.train.rollout import RolloutSpec, run_token_episode, run_token_episodes, teacher_scripts

WIDE = Limits(max_tool_calls=100, max_turns=100, max_context_tokens=100_000)


@pytest.fixture(scope="module")
def tiny(repo):
    return build_tiny_model(repo / "tasks", TinyModelConfig(vocab_size=1024, hidden_size=64, intermediate_size=128, head_dim=16))


@pytest.fixture(scope="module")
def chat(tiny):
    return ChatFormat(tiny[1], model_name="tiny")


class ScriptedTurns:
    """Plays pre-written assistant turns, token by token as a model would emit them."""

    def __init__(self, tokenizer, turns):
        self.tokenizer, self.turns, self.calls = tokenizer, list(turns), 0

    def __call__(self, contexts, max_new_tokens):
        assert len(contexts) == 1
        text = self.turns[self.calls] + "<|im_end|>"
        self.calls += 1
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"][:max_new_tokens]
        return [TurnOutput(ids, [-0.5] * len(ids))]


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def spans(mask, value):
    """(start, end) of each maximal run of `value` in mask."""
    out, start = [], None
    for i, m in enumerate(mask + [None]):
        if m == value and start is None:
            start = i
        elif m != value and start is not None:
            out.append((start, i))
            start = None
    return out


def test_env_mask_zeros_exactly_the_observation_tokens(tiny, chat, restock_task):
    _, tokenizer = tiny
    turns = [
        "<think>\n\n</think>\n\n" + call("list_products", page=1),
        "Two at once.\n" + call("get_supplier", supplier_id=999999) + "\n" + call("list_products", page=2),
        "<tool_call>\n{not json}\n</tool_call>",
        call("claim_done", action="Placed 0 orders, total 0.00."),
        call("list_products", page=3),  # never played: claim_done ended the episode
    ]
    script = ScriptedTurns(tokenizer, turns)
    episode = run_token_episode(restock_task, "v0", 0, "dtc", chat, script, WIDE)

    assert script.calls == 4 and episode.end_reason == "claim_done" and episode.turns == 4
    assert len(episode.completion_ids) == len(episode.env_mask) == len(episode.logprobs)

    # Model spans decode to exactly the turns the model wrote (each with its end-of-turn token) ...
    model_spans = spans(episode.env_mask, 1)
    assert [tokenizer.decode(episode.completion_ids[a:b]) for a, b in model_spans] == [t + "<|im_end|>" for t in turns[:4]]
    # ... and environment spans decode to exactly the tool responses the real environment produced.
    env = restock_task.instantiate("v0", 0)
    try:
        page1 = json.dumps(env.tools.list_products(page=1), ensure_ascii=False)
        page2 = json.dumps(env.tools.list_products(page=2), ensure_ascii=False)
    finally:
        env.close()
    env_texts = [tokenizer.decode(episode.completion_ids[a:b]) for a, b in spans(episode.env_mask, 0)]
    assert len(env_texts) == 3
    assert env_texts[0] == f"\n<|im_start|>user\n<tool_response>\n{page1}\n</tool_response><|im_end|>\n<|im_start|>assistant\n"
    assert env_texts[1].startswith("\n<|im_start|>user\n<tool_response>\nError: ") and "999999" in env_texts[1]
    assert env_texts[1].endswith(f"<tool_response>\n{page2}\n</tool_response><|im_end|>\n<|im_start|>assistant\n")
    # A block the parser cannot read is answered as the harness answers it: a user message, no tool run.
    assert env_texts[2].startswith("\n<|im_start|>user\nError: your tool call could not be read")
    assert env_texts[2].endswith("<|im_end|>\n<|im_start|>assistant\n") and "<tool_response>" not in env_texts[2]
    # Log-probs: the sampler's for model tokens, zero for environment tokens.
    assert all(lp == -0.5 for lp, m in zip(episode.logprobs, episode.env_mask) if m == 1)
    assert all(lp == 0.0 for lp, m in zip(episode.logprobs, episode.env_mask) if m == 0)
    assert episode.tool_calls == 3 and episode.model_tool_calls == 4 and episode.malformed_calls == 1
    # Tool-output tokens: the observation texts alone (no chat markup), as the message loop counts them.
    observations = [c.observation for c in episode.trajectory.calls]
    assert episode.tool_output_tokens == sum(len(tokenizer.encode(o, add_special_tokens=False)) for o in observations)
    assert episode.tool_output_tokens < sum(b - a for a, b in spans(episode.env_mask, 0))
    # The whole context is what the chat template renders for the same conversation.
    assert tokenizer.decode(episode.prompt_ids).endswith("<|im_start|>assistant\n")


def test_claim_done_ends_rollout_and_reward_is_the_verifiers(tiny, chat, restock_task):
    _, tokenizer = tiny
    script = ScriptedTurns(tokenizer, [call("claim_done", action="nothing to do"), call("list_products", page=1)])
    episode = run_token_episode(restock_task, "v0", 0, "dtc", chat, script, WIDE)
    assert script.calls == 1 and episode.end_reason == "claim_done" and not episode.truncated
    assert episode.env_mask == [1] * len(episode.completion_ids)  # nothing after the final turn
    assert episode.completion_ids[-1] == tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert episode.reward == 0.0 and 0.0 <= episode.score < 1.0  # the wrong answer fails the real verifier


def test_turn_budget_truncates(tiny, chat, restock_task):
    _, tokenizer = tiny
    script = ScriptedTurns(tokenizer, [call("list_products", page=p) for p in range(1, 5)])
    episode = run_token_episode(restock_task, "v0", 0, "dtc", chat, script, Limits(max_turns=2, max_context_tokens=100_000))
    assert script.calls == 2 and episode.end_reason == "max_turns" and episode.truncated and episode.reward == 0.0


def test_a_turn_cut_by_max_new_tokens_ends_the_episode(tiny, chat, restock_task):
    _, tokenizer = tiny
    script = ScriptedTurns(tokenizer, [call("list_products", page=1)])
    episode = run_token_episode(restock_task, "v0", 0, "dtc", chat, script, Limits(max_new_tokens=5))
    assert episode.end_reason == "turn_cut" and len(episode.completion_ids) == 5 and episode.model_tool_calls == 0


def test_model_generator_returns_its_tokens_and_logprobs(tiny, chat, restock_task):
    model, tokenizer = tiny
    generate = HFTurnGenerator(model, chat)
    episode = run_token_episode(restock_task, "v0", 0, "dtc", chat, generate, Limits(max_new_tokens=8, max_turns=1))
    assert 1 <= len(episode.completion_ids) <= 8 and all(m == 1 for m in episode.env_mask)
    assert all(lp <= 0.0 for lp in episode.logprobs)


def test_sampled_logprobs_are_the_models(tiny, chat):
    """The generator keeps only the sampled tokens' log-probabilities; they match a full forward pass."""
    import torch

    model, tokenizer = tiny
    context = tokenizer("<|im_start|>user\nhello<|im_end|>\n<|im_start|>assistant\n")["input_ids"]
    turn = HFTurnGenerator(model, chat, temperature=1.0)([context], 6)[0]
    ids = torch.tensor([context + turn.token_ids])
    with torch.no_grad():
        logits = model(ids).logits[0, len(context) - 1:-1]
    expected = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(turn.token_ids).unsqueeze(-1)).squeeze(-1)
    assert torch.allclose(torch.tensor(turn.logprobs), expected, atol=1e-4)


def test_batched_generation_matches_one_at_a_time(tiny, chat):
    """Episodes share generate calls (left-padded); each row must get what it would get alone."""
    import torch

    model, tokenizer = tiny
    contexts = [tokenizer("<|im_start|>user\nshort<|im_end|>\n<|im_start|>assistant\n")["input_ids"],
                tokenizer("<|im_start|>user\na much longer request about products<|im_end|>\n<|im_start|>assistant\n")["input_ids"]]
    greedy = HFTurnGenerator(model, chat, do_sample=False)
    together = greedy(contexts, 6)
    alone = [greedy([c], 6)[0] for c in contexts]
    assert [t.token_ids for t in together] == [t.token_ids for t in alone]
    for a, b in zip(together, alone):
        assert torch.allclose(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=1e-4)


def test_ptc_rollout_counts_programs_errors_and_in_program_tool_calls(tiny, chat, restock_task):
    _, tokenizer = tiny
    loop = "n = 0\nfor p in (1, 2):\n    n += len(tools.list_products(page=p)['items'])\nprint('rows', n)"
    turns = [
        call("programmatic_tool_call", code="print(tools.get_supplier(supplier_id=1))"),  # DTC-like
        call("programmatic_tool_call", code=loop),
        call("programmatic_tool_call", code="print(1/0)"),                                 # a runtime error
        call("list_products", page=1),                     # a direct task-tool call is refused under PTC
        call("claim_done", action="done"),
    ]
    episode = run_token_episode(restock_task, "v0", 0, "ptc", chat, ScriptedTurns(tokenizer, turns), WIDE)
    assert episode.end_reason == "claim_done"
    programs = episode.trajectory.programs
    assert (len(programs), sum(p.dtc_like for p in programs), episode.runtime_errors) == (3, 1, 1)
    assert episode.tool_calls == 3  # one get_supplier + two list_products, all inside programs
    env_texts = [tokenizer.decode(episode.completion_ids[a:b]) for a, b in spans(episode.env_mask, 0)]
    assert "rows 40" in env_texts[1] and "ZeroDivisionError" in env_texts[2]
    assert "programmatic_tool_call" in env_texts[3]  # the refusal tells the model how to call the tool


@pytest.mark.parametrize("harness", ["dtc", "ptc"])
def test_teacher_turns_replayed_as_tokens_solve_the_task(tiny, chat, restock_task, harness):
    """The token-level loop (parsing, dispatch, observation blocks, verdict) agrees with the harness's episode
    loop: the OracleTeacher's turns, fed in as tokens, earn the full reward for two episodes played in lockstep."""
    from progagent_lib.harness.episode import run_episode
    from progagent_lib.policy import OracleTeacher

    _, tokenizer = tiny
    trajectories = [run_episode(restock_task, "v0", seed, harness, OracleTeacher(harness)) for seed in (0, 1)]
    scripts = teacher_scripts(chat, trajectories)
    limits = Limits(max_turns=1000, max_tool_calls=None, max_context_tokens=None)
    episodes = run_token_episodes([RolloutSpec(restock_task, "v0", 0), RolloutSpec(restock_task, "v0", 1)], harness,
                                  chat, ReplayTurns(scripts), limits)
    for episode, script in zip(episodes, scripts):
        assert (episode.reward, episode.end_reason, episode.turns) == (1.0, "claim_done", len(script))
        assert episode.tool_calls >= 3 and 0 in episode.env_mask


def test_observation_tokens_when_the_template_rerenders_earlier_turns(tiny, chat):
    """Qwen3's template drops earlier turns' reasoning once a user message (parse feedback) follows them; the
    tokens the model saw stay as appended, and the new messages still get exactly their own tokens."""
    _, tokenizer = tiny
    call = {"id": "c0", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    before = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"},
              {"role": "assistant", "content": "", "reasoning_content": "R1", "tool_calls": [call]},
              {"role": "tool", "tool_call_id": "c0", "name": "f", "content": "T1"}]
    previous = chat.render(before, None, generation_prompt=True)
    after = before + [{"role": "assistant", "content": "", "reasoning_content": "R2", "tool_calls": [dict(call, id="c1")]},
                      {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "T2"},
                      {"role": "user", "content": "FEEDBACK"}]
    assert chat.render(after, None, generation_prompt=True)[:len(previous)] != previous  # the template re-rendered turn 1
    block = tokenizer.decode(chat.environment_tokens(previous, after, None))
    assert block == ("\n<|im_start|>user\n<tool_response>\nT2\n</tool_response><|im_end|>\n"
                     "<|im_start|>user\nFEEDBACK<|im_end|>\n<|im_start|>assistant\n")
