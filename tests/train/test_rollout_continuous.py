"""Episodes without lockstep: with a generator that takes one-context calls from several threads (the engine's), each
episode asks for its next turn as soon as its last one was played, and the batch still comes back whole, in order,
and the same as in lockstep.

The generator here is a test double that replays the teacher's turns (as `ReplayTurns` does in lockstep) from
worker threads, finishing them in a shuffled order; it finds each episode's script by the seed key the rollout names
the turn with, which is what makes seeds independent of the order. The tokenizer, chat template, kernels, task
environments and verifier are real. The engine itself plays a batch continuously in tests/engine/test_engine.py.
"""
import random
import threading
import time

import pytest

from progagent_lib.errors import PolicyError
from progagent_lib.generation import ReplayTurns, TurnOutput
from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model
from progagent_lib.harness import Limits
from progagent_lib.harness.chat_format import ChatFormat
from progagent_lib.harness.episode import run_episode
from progagent_lib.policy import OracleTeacher
from progagent_lib.train.env_hosts import LocalKernels
from progagent_lib.train.rollout import RolloutSpec, run_token_episodes, teacher_scripts

LIMITS = Limits(max_turns=1000, max_tool_calls=None, max_context_tokens=None)


@pytest.fixture(scope="module")
def chat(repo):
    _, tokenizer = build_tiny_model(repo / "tasks", TinyModelConfig(vocab_size=1024, hidden_size=32,
                                                                     intermediate_size=64, num_hidden_layers=1,
                                                                     head_dim=16))
    return ChatFormat(tokenizer, model_name="tiny")


class ContinuousReplay:
    """Scripted turns served from threads, in a shuffled order; `fail` maps (episode, turn) to an exception."""

    thread_safe = continuous = True
    concurrency = 64

    def __init__(self, scripts, fail=None):
        self.scripts, self.fail = scripts, fail or {}
        self.keys, self.in_flight, self.most_in_flight, self.calls = [], 0, 0, 0
        self.lock = threading.Lock()
        self.rng = random.Random(0)

    def reserve_call(self):
        self.calls += 1
        return self.calls - 1

    def __call__(self, contexts, max_new_tokens, *, seed_keys):
        assert len(contexts) == len(seed_keys) == 1
        *name, turn = seed_keys[0]
        episode = name[1] if len(name) == 2 else name[2]  # (call, episode), or by instance (task, scale, seed, sample)
        with self.lock:
            self.keys.append(seed_keys[0])
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            delay = self.rng.uniform(0, 0.05)
        try:
            time.sleep(delay)
            if (episode, turn) in self.fail:
                raise self.fail[episode, turn]
            ids = self.scripts[episode][turn][:max_new_tokens]
            return [TurnOutput(ids, [0.0] * len(ids))]  # as ReplayTurns
        finally:
            with self.lock:
                self.in_flight -= 1


@pytest.fixture(scope="module")
def scripts(chat, restock_task):
    runs = [run_episode(restock_task, "v0", seed, "ptc", OracleTeacher("ptc")) for seed in range(4)]
    return teacher_scripts(chat, runs)


def specs(task, n=4):
    return [RolloutSpec(task, "v0", seed) for seed in range(n)]


def test_continuous_batch_matches_lockstep_in_order(chat, restock_task, scripts):
    lockstep = run_token_episodes(specs(restock_task), "ptc", chat, ReplayTurns(scripts), LIMITS)
    generator = ContinuousReplay(scripts)
    continuous = run_token_episodes(specs(restock_task), "ptc", chat, generator, LIMITS)
    assert [e.trajectory.seed for e in continuous] == [0, 1, 2, 3]
    for a, b in zip(lockstep, continuous):
        assert (a.prompt_ids, a.completion_ids, a.env_mask, a.logprobs) == (b.prompt_ids, b.completion_ids, b.env_mask,
                                                                            b.logprobs)
        assert (b.reward, b.end_reason) == (1.0, "claim_done")
    # every turn was asked once, named by (the batch's call, episode, turn), and the episodes' requests overlapped
    assert sorted(generator.keys) == [(0, e, t) for e in range(4) for t in range(len(scripts[e]))]
    assert generator.most_in_flight > 1
    assert all(e.seconds_generate > 0 for e in continuous)


def test_seeded_by_instance_a_turn_is_named_by_its_episode_not_its_place(chat, restock_task, scripts):
    """Evaluations (`seed_by_instance`) name a turn's seed by (task, scale, seed, sample, turn): the same sample draws
    the same random numbers in any batch, at any place in it, under any call (the paired probe before and after RL
    samples with the same numbers). GSPO's rollouts keep (call, episode, turn): fresh numbers in every batch."""
    generator = ContinuousReplay(scripts)
    backwards = [RolloutSpec(restock_task, "v0", seed, sample=seed + 4) for seed in (3, 1, 2)]
    episodes = run_token_episodes(backwards, "ptc", chat, generator, LIMITS, seed_by_instance=True)
    assert [(e.trajectory.seed, e.trajectory.sample, e.reward) for e in episodes] == [(3, 7, 1.0), (1, 5, 1.0),
                                                                                     (2, 6, 1.0)]
    assert sorted(generator.keys) == sorted((restock_task.id, "v0", seed, seed + 4, t) for seed in (3, 1, 2)
                                            for t in range(len(scripts[seed])))


def test_a_bounded_host_holds_at_most_its_slots(chat, restock_task, scripts):
    host = LocalKernels(2)
    episodes = run_token_episodes(specs(restock_task), "ptc", chat, ContinuousReplay(scripts), LIMITS, env_host=host)
    assert [e.reward for e in episodes] == [1.0] * 4
    assert host.peak == 2 and host.live == 0


def test_a_policy_error_ends_only_its_episode(chat, restock_task, scripts):
    generator = ContinuousReplay(scripts, fail={(1, 1): PolicyError("the engine refused this context")})
    episodes = run_token_episodes(specs(restock_task), "ptc", chat, generator, LIMITS)
    assert [e.reward for e in episodes] == [1.0, 0.0, 1.0, 1.0]
    assert "the engine refused this context" in episodes[1].trajectory.error


def test_a_failing_generator_ends_the_batch(chat, restock_task, scripts):
    generator = ContinuousReplay(scripts, fail={(2, 0): RuntimeError("the generator broke")})
    host = LocalKernels(4)
    with pytest.raises(RuntimeError, match="the generator broke"):
        run_token_episodes(specs(restock_task), "ptc", chat, generator, LIMITS, env_host=host)
    assert host.live == 0  # every kernel it had started was released


def test_evaluations_bounded_in_kernels_or_on_other_models_play_one_after_the_other(monkeypatch):
    """evaluate_together runs evaluations at once only for one checkpoint on the engine, and not when they are
    bounded by max_local_kernels (each would hold its own bound): otherwise one after the other, in this thread, and
    no weights are loaded here (each evaluation loads its own). No engine is reached: `_evaluate` is a recorder."""
    import importlib
    import threading

    from progagent_lib.train.evaluate import EvalConfig, evaluate_together

    evaluation = importlib.import_module("progagent_lib.train.evaluate")   # the package exports evaluate()
    played = []
    monkeypatch.setattr(evaluation, "_evaluate", lambda config, model, tokenizer: played.append(
        (config.stage, threading.current_thread() is threading.main_thread(), config.engine_load_weights)) or ([], []))
    monkeypatch.setattr(evaluation, "_load_into_server", lambda *a: pytest.fail("loaded weights outside an evaluation"))
    engine = dict(engine_url="http://127.0.0.1:9", engine_model="smollm2")
    bounded = [EvalConfig(model="smollm2", stage=s, max_local_kernels=4, **engine) for s in ("a", "b")]
    assert evaluate_together(bounded) == [([], []), ([], [])]
    assert played == [("a", True, True), ("b", True, True)]
    played.clear()
    evaluate_together([EvalConfig(model="smollm2", stage="a", **engine), EvalConfig(model="other", stage="b", **engine)])
    assert played == [("a", True, True), ("b", True, True)]
    played.clear()
    evaluate_together([EvalConfig(model="smollm2", stage="a"), EvalConfig(model="smollm2", stage="b")])   # no engine
    assert played == [("a", True, True), ("b", True, True)]
