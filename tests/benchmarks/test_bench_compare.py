"""The cross-harness table on external suites (notebook 09): the suite's reference, the memorization baseline (one
part's stored reference replayed on the part's other tasks) and a model, on the same tasks under DTC and PTC,
scored by the suite's own checker, with Wilson intervals. A model whose context outgrows its positions ends the
episode as a budget does (max_context_tokens), not as an error."""
from __future__ import annotations

import pytest

pytest.importorskip("bfcl_eval")

from progagent_lib.analysis.benchmark_figures import comparison_chart  # noqa: E402
from progagent_lib.benchmarks import (FixedReferencePolicy, GroundTruthPolicy, compare_policies,  # noqa: E402
                                      comparison_table, load_suite)
from progagent_lib.harness import Limits, run_episode  # noqa: E402
from progagent_lib.stats import wilson_interval  # noqa: E402


@pytest.fixture(scope="module")
def bench():
    return load_suite("bfcl", suites=["base"])


def test_reference_baseline_and_table(bench, tmp_path):
    tasks = bench.select(limit=2)
    fixed = FixedReferencePolicy("dtc", bench)
    assert fixed.sources["base"].id == "bfcl/base/multi_turn_base_199" and fixed.sources["base"] not in tasks
    rows = {"ground-truth": GroundTruthPolicy, "fixed-reference": lambda h: FixedReferencePolicy(h, bench)}
    trajectories = compare_policies({"bfcl": (bench, tasks)}, rows, ["dtc", "ptc"], tmp_path, progress=False)
    assert len(trajectories) == 8 and sorted(p.name for p in tmp_path.iterdir()) == [
        "bfcl__fixed-reference.jsonl", "bfcl__ground-truth.jsonl"]
    table = comparison_table(trajectories, order=list(rows))
    assert table["policy"].to_list() == ["ground-truth"] * 2 + ["fixed-reference"] * 2
    reference = table.filter(table["policy"] == "ground-truth")
    assert reference["pass_rate"].to_list() == [1.0, 1.0] and reference["tasks"].to_list() == [2, 2]
    assert reference["pass_low"][0] == pytest.approx(wilson_interval(2, 2)[0])
    # Another task's calls do not solve these: the stored solution is not a skill.
    baseline = table.filter(table["policy"] == "fixed-reference")
    assert baseline["pass_rate"].to_list() == [0.0, 0.0]
    assert baseline["pass_high"][0] == pytest.approx(wilson_interval(0, 2)[1])
    comparison_chart(table).to_dict()   # the figure builds
    # Resumable: a rerun writes nothing new and reads the same episodes back.
    again = compare_policies({"bfcl": (bench, tasks)}, rows, ["dtc", "ptc"], tmp_path, progress=False)
    assert sorted(t.key for t in again) == sorted(t.key for t in trajectories)


def test_a_model_that_outgrows_its_context_is_truncated_not_errored(bench, tmp_path):
    """The real ChatPolicy over a tiny random model whose positions are fewer than BFCL's prompt: the episode ends
    max_context_tokens (a fail the table counts), where it used to end as an infrastructure error (left out)."""
    torch = pytest.importorskip("torch")
    from transformers import Qwen3Config, Qwen3ForCausalLM

    from progagent_lib.generation.tiny_model import train_tokenizer
    from progagent_lib.harness.chat_format import ChatFormat
    from progagent_lib.generation import GeneratorConfig, make_generator
    from progagent_lib.policy.chat import ChatPolicy

    task = bench.select(limit=1)[0]
    tokenizer = train_tokenizer([task.entry["question"][0][0]["content"]] * 3, vocab_size=400)
    torch.manual_seed(0)
    config = Qwen3Config(vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=16, max_position_embeddings=512,
                         tie_word_embeddings=True, bos_token_id=None, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    chat = ChatFormat(tokenizer)
    policy = ChatPolicy(make_generator(GeneratorConfig("transformers", 0.0), chat, model=Qwen3ForCausalLM(config)),
                        chat, max_new_tokens=8, name="tiny", max_positions=512)
    trajectory = run_episode(task, harness="dtc", policy=policy, limits=Limits(max_turns=2),
                             system_prompt=bench.system_prompts["dtc"])
    assert trajectory.end_reason == "max_context_tokens" and not trajectory.errored and trajectory.reward == 0.0
    table = comparison_table([trajectory])
    assert table["errored"].to_list() == [0] and table["pass_rate"].to_list() == [0.0]
    assert table["truncated_rate"].to_list() == [1.0]


def test_a_saved_checkpoint_plays_the_suite_as_a_row(bench, tmp_path):
    """`checkpoint_policy` (what notebook 09 builds for each stage's checkpoint) on a tiny model saved to a folder:
    one row of the table, under both harnesses, within the given budgets."""
    pytest.importorskip("torch")
    from progagent_lib.generation.tiny_model import TinyModelConfig, build_tiny_model
    from progagent_lib.train.evaluate import EvalConfig, checkpoint_policy

    task = bench.select(limit=1)[0]
    corpus = [task.entry["question"][0][0]["content"], *(str(t.description) for t in task.tools)] * 3
    build_tiny_model(config=TinyModelConfig(vocab_size=600, num_hidden_layers=1), save_to=tmp_path / "tiny",
                     corpus=corpus)
    policy = checkpoint_policy(EvalConfig(model=str(tmp_path / "tiny"), stage="tiny", max_new_tokens=8))
    trajectories = compare_policies({"bfcl": (bench, [task])}, {"tiny": {h: policy for h in ("dtc", "ptc")}},
                                    ["dtc", "ptc"], tmp_path / "out", limits=Limits(max_turns=2), progress=False)
    assert {(t.harness, t.policy) for t in trajectories} == {("dtc", "tiny"), ("ptc", "tiny")}
    assert all(t.turns <= 2 and not t.errored for t in trajectories)
    assert comparison_table(trajectories)["tasks"].to_list() == [1, 1]


def test_episodes_in_parallel_give_the_same_results_in_the_same_order(bench, tmp_path):
    """`workers`: the same episodes, verdicts and order as one at a time (each episode has its own environment and
    kernel; BFCL's backend caches are keyed per episode), every one written once to the file."""
    from progagent_lib.benchmarks import run_benchmark
    from progagent_lib.harness.trajectory import read_jsonl

    tasks = bench.select(limit=3)
    one = run_benchmark(bench, tasks, ["dtc", "ptc"], GroundTruthPolicy, tmp_path / "one.jsonl", progress=False)
    four = run_benchmark(bench, tasks, ["dtc", "ptc"], GroundTruthPolicy, tmp_path / "four.jsonl", progress=False,
                         workers=4)
    assert [t.key for t in four.trajectories] == [t.key for t in one.trajectories]
    assert [(t.reward, t.end_reason, t.tool_calls) for t in four.trajectories] == \
        [(t.reward, t.end_reason, t.tool_calls) for t in one.trajectories]
    assert all(t.reward == 1.0 for t in four.trajectories) and not four.failures
    assert sorted(t.key for t in read_jsonl(tmp_path / "four.jsonl")) == sorted(t.key for t in one.trajectories)
    with pytest.raises(ValueError, match="workers=0"):
        run_benchmark(bench, tasks, ["dtc"], GroundTruthPolicy, workers=0)


def test_a_chat_policy_over_a_server_generates_for_several_episodes_at_once():
    """A generator that serves concurrent calls (the engine's client, `thread_safe`) is not serialised by ChatPolicy;
    one that does not (transformers in this process) is. The generators here are stand-ins that count calls in flight:
    what is tested is ChatPolicy's locking, not generation."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from transformers import AutoTokenizer

    from progagent_lib.generation.sources import resolve_model_source
    from progagent_lib.generation.turns import TurnOutput
    from progagent_lib.harness.chat_format import ChatFormat
    from progagent_lib.policy.chat import ChatPolicy

    chat = ChatFormat(AutoTokenizer.from_pretrained(resolve_model_source("smollm2")), model_name="smollm2")
    done = chat.tokenizer.encode("done", add_special_tokens=False) + [chat.end_of_turn]

    class Counting:
        def __init__(self, thread_safe):
            self.thread_safe, self.now, self.most, self.lock = thread_safe, 0, 0, threading.Lock()

        def __call__(self, contexts, max_new_tokens):
            with self.lock:
                self.now += 1
                self.most = max(self.most, self.now)
            time.sleep(0.2)
            with self.lock:
                self.now -= 1
            return [TurnOutput(list(done), [0.0] * len(done)) for _ in contexts]

    messages = [{"role": "user", "content": "hello"}]
    for thread_safe, expected in ((True, 4), (False, 1)):
        generator = Counting(thread_safe)
        policy = ChatPolicy(generator, chat, max_new_tokens=8)
        with ThreadPoolExecutor(4) as pool:
            turns = list(pool.map(lambda _: policy.act(messages, []), range(4)))
        assert generator.most == expected and all(t.text.strip() == "done" for t in turns)
