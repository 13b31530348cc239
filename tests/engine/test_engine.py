"""The real engine: a vLLM server (the engine's own venv, `make engine`) serving the small pretrained model.

One server for the whole module (start-up takes minutes on 2 cores), on a free loopback port, stopped at
the end. Without the engine's venv the module is skipped, except in CI (CI=true), where that is a failure.
The infrastructure-error tests that need a server which misbehaves on purpose use the local fake in
test_policy_openai.py: a real vLLM cannot be made to answer 503 or an empty turn on demand.
"""
import json
import math
import os
import subprocess
import sys
import time

from pathlib import Path

import pytest

from progagent_lib.engine import (EngineConfigError, EngineDied, EngineNotInstalled, EngineRequestError, EngineServer,
                                  EngineStartError, PortInUse, engine_available, free_port)
from progagent_lib.harness.summary import is_infra_error

pytestmark = pytest.mark.slow

if not engine_available():
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI: the engine's venv (.venv-engine) is missing; `make test` creates it (`make engine`)")
    pytest.skip("the engine's venv (.venv-engine) is absent; create it with `make engine`", allow_module_level=True)


@pytest.fixture(scope="module")
def engine():
    with EngineServer("smollm2", free_port()) as server:  # on CPU without compilation: about 30 s to start
        yield server
    assert server.process.poll() is not None  # stopped, with its process group
    assert not server.key_path.exists()       # and its key with it


@pytest.fixture(scope="module")
def tokenizer(engine):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(engine.model_path)


def test_served_under_the_short_name_with_a_tool_template(engine):
    import httpx

    models = httpx.get(f"{engine.base_url}/models", headers=engine.headers).json()["data"]
    assert [m["id"] for m in models] == ["smollm2"]
    assert "--enable-auto-tool-choice" in engine.command() and "hermes" in engine.command()
    assert engine.policy_spec == f"openai:http://127.0.0.1:{engine.port}/v1#smollm2"


# Routes of the running server, by method. vLLM's own key check covers /v1 only: the dev-mode routes the
# weight reload uses (/pause, /collective_rpc, ...) and the others need the workbench's middleware.
ROUTES = [("POST", "/v1/completions"), ("POST", "/v1/chat/completions"), ("GET", "/v1/models"),
          ("POST", "/pause"), ("POST", "/resume"), ("POST", "/collective_rpc"), ("POST", "/reset_prefix_cache"),
          ("GET", "/is_paused"), ("POST", "/sleep"), ("POST", "/tokenize"), ("POST", "/invocations"),
          ("GET", "/metrics"), ("GET", "/health"), ("GET", "/version"), ("GET", "/docs")]


def test_every_route_refuses_a_request_without_the_servers_key(engine, tokenizer):
    import httpx

    from progagent_lib.generation.engine_client import EngineTurnGenerator
    from progagent_lib.engine.weights import reload_weights

    root = engine.base_url.removesuffix("/v1")
    wrong = {"Authorization": "Bearer " + "x" * len(engine.api_key)}
    for headers in ({}, wrong):
        for method, path in ROUTES:  # refused before any handler runs: /pause and /sleep change nothing
            response = httpx.request(method, root + path, headers=headers, json={}, timeout=30)
            assert response.status_code == 401, (method, path, response.status_code, response.text[:200])
    assert httpx.get(f"{root}/is_paused", headers=engine.headers).json() == {"is_paused": False}
    # a web page (any Origin) is refused even with the key: no browser is a client of the engine
    for origin in ("http://evil.example", f"http://127.0.0.1:{root.rsplit(':', 1)[1]}"):
        response = httpx.get(f"{root}/is_paused", headers={**engine.headers, "Origin": origin}, timeout=30)
        assert response.status_code == 403, (origin, response.status_code)
    # the workbench's clients with a wrong key: generation and the weight reload say what to do
    with pytest.raises(EngineRequestError, match=r"completions refused the request \(HTTP 401\).*engine-keys"):
        EngineTurnGenerator(engine.base_url, "smollm2", 2, api_key="x" * 43)([[1, 2, 3]], 2)
    with pytest.raises(EngineRequestError, match=r"/pause refused the request \(HTTP 401\)"):
        reload_weights(engine.base_url, engine.model_path, api_key="x" * 43)
    # with the key (found by the URL, as every client finds it) both work
    assert reload_weights(engine.base_url, engine.model_path) > 0     # the model's own weights: nothing changes
    turn = EngineTurnGenerator.from_tokenizer(engine.base_url, "smollm2", tokenizer, temperature=0.0)([[1, 2, 3]], 2)[0]
    assert len(turn.token_ids) == 2


def test_the_key_is_new_at_each_start_kept_off_the_command_line_and_readable_by_its_user_only(engine):
    import stat

    from progagent_lib.engine import engine_api_key

    assert len(engine.api_key) >= 40 and engine_api_key(engine.base_url) == engine.api_key
    assert stat.S_IMODE(engine.key_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(engine.key_path.parent.stat().st_mode) == 0o700
    assert engine.api_key not in " ".join(engine.command())
    for pid in [engine.process.pid, *_children(engine.process.pid)]:   # what `ps` shows every local user
        assert engine.api_key.encode() not in open(f"/proc/{pid}/cmdline", "rb").read()
    assert engine.api_key not in engine.log_path.read_text(errors="replace")
    assert EngineServer("smollm2", engine.port).api_key is None  # made at start(), one per start


def test_on_a_small_cpu_machine_the_workers_threads_take_every_core(engine, monkeypatch):
    """vLLM's own binding keeps one core for its scheduler: on 2 cores, generation would get one. On a machine of
    SMALL_MACHINE_CPUS or fewer the worker is bound to every core (the engine started here says which in its log, on
    such a machine); a binding in the environment, a GPU, or more cores keep vLLM's."""
    from progagent_lib.engine import server as server_module
    from progagent_lib.engine.server import SMALL_MACHINE_CPUS, cpu_binding

    cpus = sorted(os.sched_getaffinity(0))
    if not server_module.gpu_visible() and len(cpus) <= SMALL_MACHINE_CPUS:   # this machine: the engine's own log
        expected = ",".join(str(c) for c in cpus)
        assert f"VLLM_CPU_OMP_THREADS_BIND={expected!r}" in engine.log_path.read_text(errors="replace")
        assert f"core ids={cpus}" in engine.log_path.read_text(errors="replace")
    # the rule itself, on every machine
    monkeypatch.setattr(server_module, "gpu_visible", lambda: False)
    monkeypatch.setattr(server_module.os, "sched_getaffinity", lambda pid: {0, 1})
    assert cpu_binding({}) == {"VLLM_CPU_OMP_THREADS_BIND": "0,1"}
    assert cpu_binding({"VLLM_CPU_OMP_THREADS_BIND": "auto"}) == {}
    monkeypatch.setattr(server_module, "gpu_visible", lambda: True)
    assert cpu_binding({}) == {}
    monkeypatch.setattr(server_module, "gpu_visible", lambda: False)
    monkeypatch.setattr(server_module.os, "sched_getaffinity", lambda pid: set(range(SMALL_MACHINE_CPUS + 1)))
    assert cpu_binding({}) == {}


def _children(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as children:
            found += [int(c) for c in children.read().split()]
    return found + [grand for child in found for grand in _children(child)]


def test_a_host_other_than_loopback_and_the_servers_own_flags_are_refused():
    with pytest.raises(EngineConfigError, match="not a loopback address.*allow_non_loopback"):
        EngineServer("smollm2", free_port(), host="0.0.0.0")
    assert EngineServer("smollm2", free_port(), host="0.0.0.0", allow_non_loopback=True).host == "0.0.0.0"
    assert EngineServer("smollm2", free_port(), host="localhost").base_url.startswith("http://localhost:")
    for extra in (["--host", "0.0.0.0"], ["--ho=0.0.0.0"], ["--api_key", "k"], ["--port=1"], ["--uds", "/tmp/s"]):
        with pytest.raises(EngineConfigError, match="sets --host, --port, --uds, --api-key itself"):
            EngineServer("smollm2", free_port(), extra_args=extra)
    done = subprocess.run([sys.executable, "-m", "progagent_lib.cli", "engine", "serve", "--model", "smollm2", "--host",
                           "0.0.0.0"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "--allow-non-loopback" in done.stderr, done.stderr


def test_openai_policy_episodes_end_without_errors_and_tool_calls_come_back_as_calls(engine, restock_task):
    from progagent_lib.harness import run_episode
    from progagent_lib.harness.episode import Limits
    from progagent_lib.policy import OpenAIPolicy

    free = OpenAIPolicy(engine.base_url, "smollm2", temperature=0.0, max_tokens=128, max_retries=1, backoff=0.1)
    t = run_episode(restock_task, "v0", 0, "ptc", free, Limits(max_turns=2))
    assert not is_infra_error(t), t.error
    assert t.turns >= 1 and t.context_tokens > 500  # the server's usage report: system prompt and tools were sent
    # The model is too small to choose a tool by itself; forcing the choice on a one-tool request shows the
    # server's side of tool calling (a template that renders tools, the hermes parser) returns structured calls.
    tools = [{"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
    forced = OpenAIPolicy(engine.base_url, "smollm2", temperature=0.0, max_tokens=200, max_retries=1, backoff=0.1,
                          extra_body={"tool_choice": "required"})
    turn = forced.act([{"role": "user", "content": "What is the weather in Paris? Use the tool."}], tools)
    assert [c.name for c in turn.tool_calls] == ["get_weather"] and not turn.parse_errors and turn.text == ""


def test_progagent_run_ptc_and_dtc_against_the_engine(engine, restock_task, tmp_path):
    out = tmp_path / "smollm2.jsonl"
    command = [sys.executable, "-m", "progagent_lib.cli", "run", "--tasks", str(restock_task.root), "--harness",
               "ptc,dtc", "--policy", engine.policy_spec, "--out", str(out), "--max-turns", "2", "--no-progress",
               "--policy-arg", "max_tokens=128", "--policy-arg", "temperature=0"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["harness"] for r in rows) == ["dtc", "ptc"]
    assert all(r["end_reason"] != "policy_error" for r in rows), [r["error"] for r in rows]
    assert "errored" in done.stdout and "openai:smollm2" in done.stdout  # the summary table, with its errored column


def test_difficulty_filter_over_the_engine_has_no_errored_episodes(engine, restock_task, tmp_path):
    from progagent_lib.harness.episode import Limits
    from progagent_lib.policy import OpenAIPolicy
    from progagent_lib.synthesis.difficulty import difficulty_filter

    policy = OpenAIPolicy(engine.base_url, "smollm2", max_tokens=128, max_retries=1, backoff=0.1)
    policy.default_limits = Limits(max_turns=2)  # the small model's episodes are cut short: the filter's machinery is the point
    result = difficulty_filter([restock_task], policy, tmp_path / "filter.jsonl", k=2, scales=("v0",), progress=False)
    assert result.errored == 0 and result.pass_rates["episodes"].to_list() == [2]
    assert result.kept == [] and "outside" in result.decisions["reason"][0]  # it never solves the task: too hard


def test_turn_generator_token_in_token_out(engine, tokenizer):
    from progagent_lib.generation.engine_client import EngineTurnGenerator

    generate = EngineTurnGenerator.from_tokenizer(engine.base_url, "smollm2", tokenizer, temperature=0.0)
    end_of_turn = tokenizer.convert_tokens_to_ids("<|im_end|>")
    contexts = [tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True,
                                              tokenize=True, return_dict=True)["input_ids"]
                for question in ("What is the capital of France?", "Write a long story about a dragon.")]
    short, cut = generate([list(c) for c in contexts], max_new_tokens=24)
    assert short.token_ids[-1] == end_of_turn and len(short.token_ids) < 24  # stopped at the end of its turn, kept
    assert "Paris" in tokenizer.decode(short.token_ids)
    assert len(cut.token_ids) == 24 and end_of_turn not in cut.token_ids   # ran out of budget
    for turn in (short, cut):
        assert len(turn.logprobs) == len(turn.token_ids) and all(lp <= 0.0 for lp in turn.logprobs)
    again = generate([list(contexts[0])], max_new_tokens=24)[0]
    assert again.token_ids == short.token_ids  # greedy: the same tokens from the same token context


def test_a_seeded_group_of_one_context_gets_different_samples_and_a_rerun_the_same(engine, tokenizer):
    """A GSPO group is one context sampled G times: one seed for the whole request would give G copies of one
    sample (zero reward variance by construction). Each context gets its own seed. Sent one at a time, the same
    seed replays the run exactly; sent together (the default), vLLM batches them and bfloat16 batched numerics
    can move a sampled token, so there the rerun is not compared (measured: 9 of 24 samples differed)."""
    from progagent_lib.generation.engine_client import EngineTurnGenerator

    context = list(tokenizer.apply_chat_template([{"role": "user", "content": "Write a poem about the sea."}],
                                                 add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"])
    together = EngineTurnGenerator.from_tokenizer(engine.base_url, "smollm2", tokenizer, temperature=1.0, seed=7)
    group = [turn.token_ids for turn in together([context] * 4, max_new_tokens=24)]
    assert len({tuple(ids) for ids in group}) == 4
    next_turn = [turn.token_ids for turn in together([context] * 4, max_new_tokens=24)]
    assert next_turn != group  # a later call draws new seeds

    def one_at_a_time():
        generate = EngineTurnGenerator.from_tokenizer(engine.base_url, "smollm2", tokenizer, temperature=1.0, seed=7,
                                                      concurrency=1)
        return [turn.token_ids for turn in generate([context] * 4, max_new_tokens=24)]

    first = one_at_a_time()
    assert len({tuple(ids) for ids in first}) == 4
    assert one_at_a_time() == first


def test_episodes_play_without_lockstep_and_a_seeded_rerun_one_at_a_time_replays(engine, tokenizer, restock_task):
    """The engine takes one-context calls from threads, so a batch of episodes plays without lockstep: each turn is
    asked for as soon as its episode's last one was played, seeded by (batch, episode, turn). One request at a time,
    a rerun replays every episode exactly, whatever order its turns were asked in; three samples of one prompt
    differ. The prefix cache is emptied before each run: a turn whose context was cached is computed from the cached
    keys and values, and in bfloat16 that can move a sampled token."""
    import httpx

    from progagent_lib.generation.engine_client import EngineTurnGenerator
    from progagent_lib.harness import Limits
    from progagent_lib.harness.chat_format import ChatFormat
    from progagent_lib.train.rollout import RolloutSpec, run_token_episodes

    chat = ChatFormat(tokenizer, model_name="smollm2")
    limits = Limits(max_turns=2, max_new_tokens=48, max_context_tokens=4096)
    specs = [RolloutSpec(restock_task, "v0", 0, sample=i) for i in range(3)]

    def play(concurrency):
        root = engine.base_url.removesuffix("/v1")
        httpx.post(f"{root}/reset_prefix_cache", headers=engine.headers, timeout=60).raise_for_status()
        generate = EngineTurnGenerator.from_tokenizer(engine.base_url, "smollm2", tokenizer, temperature=1.0, seed=11,
                                                      concurrency=concurrency)
        assert generate.continuous
        return run_token_episodes(specs, "ptc", chat, generate, limits)

    first = play(1)
    assert not any(e.errored for e in first) and all(e.turns >= 1 for e in first)
    assert len({tuple(e.completion_ids) for e in first}) == 3
    assert [e.completion_ids for e in play(1)] == [e.completion_ids for e in first]
    together = play(3)
    assert not any(e.errored for e in together) and len({tuple(e.completion_ids) for e in together}) == 3


def test_seeded_requests_whose_prompts_overflow_one_step_do_not_kill_the_engine(engine, tokenizer):
    """vLLM's CPU worker rewinds a seeded request's torch.Generator when its prompt is prefilled in chunks, which CPU
    generators cannot do: the engine core died ("CPU Generator does not use offset") once seeded contexts together
    overflowed one step's token budget (an evaluation of 16 episodes x 4 samples did). On CPU the server prefills every
    prompt whole (measured: 64 seeded ~3.6k-token contexts at once died with chunking, passed without)."""
    from progagent_lib.generation.engine_client import EngineTurnGenerator
    from progagent_lib.engine.server import gpu_visible

    if not gpu_visible():
        assert "--no-enable-chunked-prefill" in engine.command()
    text = Path(__file__).resolve().parents[2].joinpath("README.md").read_text().split()
    contexts = [list(tokenizer.apply_chat_template([{"role": "user", "content": " ".join(text[i * 97: i * 97 + 1500])}],
                                                   add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"])
                for i in range(6)]
    assert sum(map(len, contexts)) > engine.max_model_len   # more than one step takes at once
    turns = EngineTurnGenerator.from_tokenizer(engine.base_url, "smollm2", tokenizer, temperature=1.0, seed=3)(contexts, 4)
    assert len(turns) == 6 and all(turn.token_ids for turn in turns)


def test_weights_reload_in_place_changes_what_the_server_generates(engine, tokenizer, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from progagent_lib.generation.engine_client import EngineTurnGenerator
    from progagent_lib.engine.weights import sync_weights

    generate = EngineTurnGenerator.from_tokenizer(engine.base_url, "smollm2", tokenizer, temperature=0.0)
    context = list(tokenizer.apply_chat_template([{"role": "user", "content": "Name a colour."}],
                                                 add_generation_prompt=True, tokenize=True, return_dict=True)["input_ids"])
    before = generate([context], 8)[0]
    model = AutoModelForCausalLM.from_pretrained(engine.model_path, dtype=torch.float32)
    with torch.no_grad():  # a policy with no preference: the final norm zeroed, so every logit is 0
        model.model.norm.weight.zero_()
    seconds = sync_weights(model, engine.base_url, tmp_path / "step")
    uniform = generate([context], 8)[0]
    assert uniform.logprobs == pytest.approx([-math.log(len(tokenizer))] * len(uniform.token_ids), abs=1e-3)
    original = AutoModelForCausalLM.from_pretrained(engine.model_path, dtype=torch.float32)
    sync_weights(original, engine.base_url, tmp_path / "back")
    assert generate([context], 8)[0].token_ids == before.token_ids and seconds["seconds_reload"] > 0


def test_a_lora_model_is_saved_merged_and_left_as_it_was(engine, tmp_path):
    import copy

    import torch
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from progagent_lib.engine.weights import save_for_engine

    base = AutoModelForCausalLM.from_pretrained(engine.model_path, dtype=torch.float32)
    model = get_peft_model(base, LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    before = {k: v.clone() for k, v in model.state_dict().items()}
    saved = load_file(str(save_for_engine(model, tmp_path / "lora") / "model.safetensors"))
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())  # no merge-and-back drift
    merged = copy.deepcopy(model).merge_and_unload().state_dict()
    assert sorted(saved) == sorted(k for k in merged if k != "lm_head.weight")  # tied to the embedding
    assert all(torch.allclose(saved[k], merged[k]) for k in saved)


def test_evaluation_and_a_gspo_step_generate_through_the_engine(engine, repo, tmp_path, monkeypatch):
    """The token adapter on the engine: evaluation writes trajectories; GSPO's second generation batch comes after
    the trainer's weights were saved and reloaded by the server (no NCCL)."""
    from progagent_lib.harness import read_jsonl
    from progagent_lib.train.evaluate import EvalConfig, evaluate
    from progagent_lib.train.gspo import GSPORunConfig, run_gspo

    monkeypatch.chdir(repo)
    trajectories, table = evaluate(EvalConfig(model="smollm2", stage="base", engine_url=engine.base_url, engine_model="smollm2",
                                              output_dir=str(tmp_path / "eval"), task_ids=["retail/restock_orders"],
                                              harnesses=["ptc"], seeds=[1000], max_turns=1, max_new_tokens=16))
    assert len(trajectories) == 1 and not trajectories[0].errored and trajectories[0].turns == 1
    assert read_jsonl(tmp_path / "eval" / "trajectories.jsonl")[0].policy == "hf:smollm2@base"
    result = run_gspo(GSPORunConfig(model="smollm2", engine_url=engine.base_url, engine_model="smollm2",
                                    output_dir=str(tmp_path / "gspo"), task_ids=["retail/restock_orders"], harness="ptc",
                                    scales=["v0"], train_seeds=[0], num_generations=2, num_iterations=1, max_steps=2,
                                    save_steps=2, max_turns=1, max_new_tokens=16, max_context_tokens=4096))
    log = result["dynamics"]
    assert [line["episodes"] for line in log] == [2, 2] and all(line["errored_episodes"] == 0 for line in log)
    # the starting weights are loaded before the first batch, the trained ones before the second
    assert log[0]["seconds_weight_sync"] > 0.0 and log[1]["seconds_weight_sync"] > 0.0
    assert any((tmp_path / "gspo" / "engine-weights").glob("*.safetensors"))


def test_evaluations_of_one_model_play_at_once_with_one_weight_load(engine, repo, tmp_path, monkeypatch):
    """evaluate_together: two evaluations of one checkpoint on the engine load its weights once, run at the same
    time (their episodes share the engine's batches), and each writes its own trajectories; evaluations of two
    checkpoints run one after the other, each loading its own."""
    import importlib
    import shutil
    import threading

    from progagent_lib.engine import weights
    from progagent_lib.generation.sources import resolve_model_source
    from progagent_lib.train.evaluate import EvalConfig, evaluate_together

    evaluation = importlib.import_module("progagent_lib.train.evaluate")   # the package exports evaluate()

    monkeypatch.chdir(repo)
    loads, spans = [], []
    reload = weights.reload_weights
    monkeypatch.setattr(weights, "reload_weights", lambda url, source: loads.append(Path(source).name) or reload(url, source))
    play = evaluation._evaluate

    def timed(config, model, tokenizer):
        started = time.monotonic()
        try:
            return play(config, model, tokenizer)
        finally:
            spans.append((config.stage, started, time.monotonic(), threading.current_thread().name))

    monkeypatch.setattr(evaluation, "_evaluate", timed)
    model = tmp_path / "model"
    shutil.copytree(resolve_model_source("smollm2"), model)
    common = dict(model=str(model), engine_url=engine.base_url, engine_model="smollm2", task_ids=["retail/restock_orders"],
                  harnesses=["ptc"], seeds=[1000, 1001], max_turns=1, max_new_tokens=16)
    greedy = EvalConfig(stage="greedy", output_dir=str(tmp_path / "greedy"), **common)
    sampled = EvalConfig(stage="sampled", output_dir=str(tmp_path / "sampled"), temperature=0.7, samples=2, **common)
    (greedy_episodes, _), (sampled_episodes, _) = evaluate_together([greedy, sampled])
    assert loads == ["model"] and len(greedy_episodes) == 2 and len(sampled_episodes) == 4
    assert not any(t.errored for t in greedy_episodes + sampled_episodes)
    assert all((tmp_path / name / "trajectories.jsonl").exists() for name in ("greedy", "sampled"))
    (_, start_a, end_a, thread_a), (_, start_b, end_b, thread_b) = spans
    assert thread_a != thread_b and max(start_a, start_b) < min(end_a, end_b)   # at the same time
    loads.clear(), spans.clear()
    evaluate_together([greedy, EvalConfig(stage="base", output_dir=str(tmp_path / "base"), **{**common, "model": "smollm2"})])
    assert loads == ["model", Path(resolve_model_source("smollm2")).name]
    assert spans[0][2] <= spans[1][1]   # one after the other


def quick_bench(script: str, engine) -> dict:
    """bench/<script> in its quick mode against the module's running engine: it exits 0, and its last line (JSON)."""
    done = subprocess.run([sys.executable, f"bench/{script}", "--quick", "--url", engine.base_url, "--served-name",
                           "smollm2"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_bench_quick_mode_against_the_running_engine(engine):
    result = quick_bench("engine.py", engine)
    assert [r["concurrent"] for r in result["rows"]] == [1, 8]
    assert all(r["engine_over_generate"] > 0 for r in result["rows"])


def test_rollout_modes_bench_quick_mode_against_the_running_engine(engine):
    result = quick_bench("rollout_modes.py", engine)
    assert set(result["arms"]) == {"lockstep", "continuous"} and result["continuous_speedup"] > 0
    assert all(arm["errored"] == 0 and arm["turns"] >= 2 for arm in result["arms"].values())


def test_evaluate_together_bench_quick_mode_against_the_running_engine(engine):
    result = quick_bench("evaluate_together.py", engine)
    assert set(result["arms"]) == {"together", "one after the other"} and result["together_speedup"] > 0
    assert all(arm["errored"] == 0 and arm["episodes"] == 4 for arm in result["arms"].values())


@pytest.mark.slow
def test_bench_bindings_quick_mode_starts_one_server_per_binding():
    """`bench/engine.py --bindings`: vLLM's own binding and every core, one server each, both measured."""
    done = subprocess.run([sys.executable, "bench/engine.py", "--bindings", "--quick"], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert [r["concurrent"] for r in result["rows"]] == [1, 8, 24]
    assert all(r["auto_tokens_per_s"] > 0 and r["every_core_tokens_per_s"] > 0 for r in result["rows"])
    assert result["every_core"] == ",".join(str(c) for c in sorted(os.sched_getaffinity(0)))


def test_bad_input_port_in_use_and_a_model_the_server_cannot_load(engine, tmp_path):
    with pytest.raises(PortInUse, match=f"port {engine.port} on 127.0.0.1 is already in use"):
        EngineServer("smollm2", engine.port).start()
    done = subprocess.run([sys.executable, "-m", "progagent_lib.cli", "engine", "serve", "--model", "smollm2", "--port",
                           str(engine.port)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "already in use" in done.stderr and "--port" in done.stderr
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "no_such_architecture"}')
    started = time.monotonic()
    with pytest.raises(EngineStartError, match=r"(?s)could not load the model.*--- .* \(end\) ---"):
        EngineServer(str(broken), free_port()).start()
    assert time.monotonic() - started < 600


def test_missing_engine_venv_says_make_engine(monkeypatch):
    import progagent_lib.engine.server as server

    monkeypatch.setattr(server, "ENGINE_VENV", server.REPO / ".venv-engine-absent")
    monkeypatch.delenv("PROGAGENT_ENGINE_PYTHON", raising=False)
    with pytest.raises(EngineNotInstalled, match="make engine"):
        EngineServer("smollm2", free_port()).start()


def test_a_server_that_dies_mid_run_is_an_errored_episode(engine, restock_task):
    """Last in this module: it kills the module's server (a second start would cost minutes)."""
    from progagent_lib.harness import run_episode
    from progagent_lib.policy import OpenAIPolicy

    policy = OpenAIPolicy(engine.base_url, "smollm2", max_tokens=64, max_retries=1, backoff=0.1)
    engine.process.kill()  # the API process dies; the fixture's stop() takes its process group down
    engine.process.wait()
    t = run_episode(restock_task, "v0", 0, "ptc", policy)
    assert is_infra_error(t) and engine.base_url in t.error and "progagent engine serve" in t.error
    with pytest.raises(EngineDied, match="exited with code"):
        engine.check_alive()


def test_reproduce_serves_the_profiles_engine_to_its_notebooks(tmp_path, monkeypatch):
    """`progagent reproduce` under a profile with `engine:` starts one server for the run; the notebooks' training
    recipe generates through it ($PROGAGENT_ENGINE_URL), and the server is gone when the run ends."""
    import httpx
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    from progagent_lib.analysis.reproduce import reproduce

    profiles = tmp_path / "profiles.yaml"
    profiles.write_text("eng:\n  description: engine\n  tasks: [tasks/retail/restock_orders]\n"
                        "  train_config: configs/ci.yaml\n  engine: smollm2\n")
    monkeypatch.setenv("PROGAGENT_PROFILES", str(profiles))
    folder = tmp_path / "notebooks"
    folder.mkdir()
    nb = new_notebook(cells=[
        new_code_cell("profile = None\nrun_dir = None", metadata={"tags": ["parameters"]}),
        new_code_cell("import json, httpx\nfrom progagent_lib.analysis.profiles import load_profile\n"
                      "P = load_profile(profile, run_dir)\nc = P.training_recipe()\n"
                      "from progagent_lib.engine import auth_headers\n"
                      "served = [m['id'] for m in httpx.get(c.engine_url + '/models', headers=auth_headers(c.engine_url))"
                      ".json()['data']]\n"
                      "P.path('seen.json').write_text(json.dumps({'url': c.engine_url, 'model': c.engine_model, "
                      "'served': served}))")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(nb, folder / "00_engine.ipynb")
    reproduce("eng", run_dir=tmp_path / "run", notebooks_dir=folder)
    seen = json.loads((tmp_path / "run" / "seen.json").read_text())
    assert seen["served"] == ["smollm2"] and seen["model"] == "smollm2"
    assert "engine_start" in json.loads((tmp_path / "run" / "reproduce.json").read_text())
    with pytest.raises(httpx.HTTPError):
        httpx.get(seen["url"] + "/models", timeout=5)   # stopped with the run
    from progagent_lib.engine import engine_api_key

    assert engine_api_key(seen["url"]) is None        # and its key file removed
    assert "PROGAGENT_ENGINE_URL" not in os.environ


def test_reproduce_without_the_engines_environment_says_how_to_get_it(tmp_path, monkeypatch):
    profiles = tmp_path / "profiles.yaml"
    profiles.write_text("eng:\n  description: engine\n  tasks: [tasks/retail/restock_orders]\n"
                        "  train_config: configs/ci.yaml\n  engine: smollm2\n")
    env = {**os.environ, "PROGAGENT_PROFILES": str(profiles), "PROGAGENT_ENGINE_PYTHON": str(tmp_path / "no-python")}
    done = subprocess.run([sys.executable, "-m", "progagent_lib.cli", "reproduce", "--profile", "eng", "--run-dir",
                           str(tmp_path / "run"), "--only", "none"], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 1 and "make engine" in done.stderr and "--no-engine" in done.stderr, done.stderr


def test_a_sigterm_to_the_process_that_started_the_server_stops_the_server(tmp_path):
    """The server runs in a session of its own: before, `kill` of a `progagent reproduce` left vLLM running (found
    holding its memory after a study run was stopped). A SIGTERM now unwinds the starter, which stops the server."""
    script = tmp_path / "starter.py"
    script.write_text(
        "import sys, time\n"
        "from progagent_lib.engine import EngineServer, free_port\n"
        "with EngineServer('smollm2', free_port()) as server:\n"
        "    print(server.process.pid, flush=True)\n"
        "    time.sleep(600)\n")
    starter = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True,
                               cwd=Path(__file__).resolve().parents[2])
    try:
        engine_pid = int(starter.stdout.readline())
        os.kill(starter.pid, 15)
        assert starter.wait(timeout=120) == 143

        def live_in_group() -> list[int]:   # zombies left to a non-reaping init do not count
            found = []
            for stat in Path("/proc").glob("[0-9]*/stat"):
                try:
                    fields = stat.read_text().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                if int(fields[2]) == engine_pid and fields[0] != "Z":
                    found.append(int(stat.parent.name))
            return found

        assert live_in_group() == []   # the server and its engine-core children are gone
    finally:
        starter.kill()
