"""TRL adapter: GRPOTrainer(environment_factory=...) from the installed TRL, two real training steps on CPU with the
small pretrained model on two tasks under PTC; the rewards TRL logs are our verifier's verdicts. Also the tools TRL
shows the model, a teacher episode through the environment class (R = 1), and the bad-input cases."""
import inspect
import os
import re
from pathlib import Path

import psutil
import pytest

from progagent_lib import load_task
from progagent_lib.harness import Episode
from progagent_lib.integrations import trl as trl_env
from progagent_lib.integrations.trl import (TRLEnvironmentError, close_environments, dataset_rows, environment_class,
                                            environment_factory, episode_metrics, make_dataset)
from progagent_lib.task.task import episodes_root

REPO = Path(__file__).resolve().parents[2]
TASKS = [REPO / "tasks" / "retail" / "restock_orders", REPO / "tasks" / "customer_support" / "sla_escalations"]


@pytest.fixture(scope="module")
def tasks():
    return [load_task(path) for path in TASKS]


def episode_folders() -> set[str]:
    return {p.name for p in episodes_root().iterdir() if f"-p{os.getpid()}-" in p.name}


def child_processes() -> int:
    """Kernels (and their sandboxes) are children of this process; the verification server (one per host process,
    started by the first verification and kept for the next) is not an episode's."""
    def episodes(process: psutil.Process) -> bool:
        try:
            return "verify_server import serve" not in " ".join(process.cmdline())
        except psutil.Error:
            return False

    return sum(1 for p in psutil.Process().children(recursive=True) if episodes(p))


@pytest.fixture
def no_leftovers():
    """Nothing an episode made (state copy, kernel) outlives the test."""
    close_environments()
    folders, children = episode_folders(), child_processes()
    yield
    close_environments()
    assert episode_folders() == folders
    assert child_processes() <= children


def oracle_program(task, seed: int = 0) -> str:
    """The oracle as one program for the kernel: oracle_kit's source pasted over its import, then solve."""
    source = (task.root / "oracle.py").read_text()
    kit = (REPO / "progagent_lib" / "task" / "oracle_kit.py").read_text()
    program, replaced = re.subn(r"^from progagent_lib\.task\.oracle_kit import .*$", lambda _: kit, source, flags=re.M)
    assert replaced == 1
    return program + f"\n\nanswer = solve(tools, **{task.params_for(seed)!r})\nprint(answer)\n"


# --- what TRL shows the model -----------------------------------------------------------------------
@pytest.mark.parametrize("harness", ["ptc", "dtc", "hybrid"])
def test_tools_are_the_episode_tools(tasks, harness):
    from transformers.utils import get_json_schema

    def sink(trajectory):  # a plain function given as an option must not become a tool
        pass

    factory = environment_factory(tasks, harness, on_trajectory=sink)
    assert set(factory) == {t.id for t in tasks}
    for task in tasks:
        cls = factory[task.id]
        with Episode(task, "v0", 0, harness) as episode:
            assert cls.tool_schemas == episode.tools
        # TRL's own discovery: the public functions of the class, minus reset and get_reward
        public = [n for n, _ in inspect.getmembers(cls, inspect.isfunction) if not n.startswith("_")]
        assert sorted(set(public) - {"reset", "get_reward"}) == sorted(s["function"]["name"] for s in episode.tools)
        for schema in episode.tools:
            got = get_json_schema(getattr(cls, schema["function"]["name"]))["function"]
            want = schema["function"]
            assert got["name"] == want["name"]
            assert got["description"] == trl_env.docstring_text(want["description"])
            assert list(got["parameters"]["properties"]) == list(want["parameters"]["properties"])
            assert sorted(got["parameters"].get("required", [])) == sorted(want["parameters"]["required"])
            for name, prop in want["parameters"]["properties"].items():
                assert got["parameters"]["properties"][name]["type"] == prop["type"]
                assert got["parameters"]["properties"][name]["description"] == prop["description"]
    names = [s["function"]["name"] for s in factory[tasks[0].id].tool_schemas]
    assert ("programmatic_tool_call" in names) == (harness != "dtc")
    assert ("list_products" in names) == (harness != "ptc")


def test_dataset_rows(tasks):
    rows = dataset_rows(tasks, "ptc", scales=["v0", "v1"], seeds=[0, 3])
    assert len(rows) == 8
    row = rows[-1]
    assert (row["task"], row["scale"], row["seed"], row["harness"], row["environment"]) == \
        (tasks[1].id, "v1", 3, "ptc", tasks[1].id)
    assert row["prompt"][1] == {"role": "user", "content": tasks[1].instruction(3)}
    assert row["prompt"][0]["role"] == "system"
    assert "environment" not in dataset_rows(tasks[:1], "ptc")[0]  # one task: one class, no routing column
    assert len(make_dataset(tasks, "ptc", seeds=[0])) == 2


# --- one teacher episode through the class, as TRL would drive it -----------------------------------
def test_teacher_episode_reaches_reward_one(tasks, no_leftovers):
    recorded = []
    task = tasks[0]
    cls = environment_class(task, "ptc", on_trajectory=recorded.append)
    env = cls()  # TRL: no arguments
    row = dataset_rows(task, "ptc", seeds=[1])[0]
    assert env.reset(**row) is None
    assert "Error" in env.programmatic_tool_call(code="x = 1\nraise ValueError('boom')")
    answer = env.programmatic_tool_call(code=oracle_program(task, seed=1)).strip()
    assert env.claim_done(action=answer)
    assert env.get_reward() == 1.0 and env.get_reward() == 1.0  # idempotent
    (trajectory,) = recorded
    assert (trajectory.task_id, trajectory.seed, trajectory.end_reason, trajectory.reward, trajectory.score) == \
        (task.id, 1, "claim_done", 1.0, 1.0)
    assert trajectory.runtime_errors == 1 and trajectory.model_tool_calls == 3
    # the pooled instance is reused: reset clears everything
    env.reset(**row)
    assert env.trajectory is None
    assert env.get_reward() == 0.0  # ended without claim_done: judged on the state as left
    assert len(recorded) == 2 and recorded[1].end_reason == "no_tool_call"


# --- bad input ----------------------------------------------------------------------------------------
def test_bad_input(tasks, no_leftovers):
    cls = environment_class(tasks[0], "ptc")
    env = cls()
    row = dataset_rows(tasks[0], "ptc")[0]
    with pytest.raises(TRLEnvironmentError, match="before reset"):
        env.terminal(command="ls")
    with pytest.raises(TRLEnvironmentError, match="get_reward\\(\\) before reset"):
        env.get_reward()
    for key in ("task", "scale", "seed"):
        with pytest.raises(ValueError, match=f"the dataset row has no {key}"):
            env.reset(**{k: v for k, v in row.items() if k != key})
    with pytest.raises(ValueError, match="unknown task 'retail/no_such_task'"):
        env.reset(**{**row, "task": "retail/no_such_task"})
    with pytest.raises(ValueError, match="unknown task"):  # another real task: this class serves one
        env.reset(**{**row, "task": tasks[1].id})
    with pytest.raises(ValueError, match="unknown scale"):
        env.reset(**{**row, "scale": "v9"})
    with pytest.raises(ValueError, match="harness 'dtc'"):
        env.reset(**{**row, "harness": "dtc"})
    with pytest.raises(ValueError, match="params"):
        env.reset(**{**row, "seed": 5})  # the row's params are seed 0's
    with pytest.raises(ValueError, match="prompt is not the opening messages"):
        env.reset(**{**row, "prompt": [{"role": "user", "content": "something else"}]})
    with pytest.raises(ValueError, match="no prompt"):
        env.reset(**{k: v for k, v in row.items() if k != "prompt"})
    with pytest.raises(ValueError, match="unknown harness"):
        environment_class(tasks[0], "direct")
    with pytest.raises(Exception, match="does not exist"):
        environment_factory(["tasks/retail/no_such_task"])
    # a tool called after the episode ended: a clear error (TRL shows it to the model as {'error': ...})
    env.reset(**row)
    env.claim_done(action="nothing to do")
    with pytest.raises(TRLEnvironmentError, match=r"the episode has ended \(claim_done\)"):
        env.programmatic_tool_call(code="print(1)")
    assert env.get_reward() == 0.0


def test_trainer_that_never_ends_an_episode(tasks, no_leftovers):
    folders, children = episode_folders(), child_processes()
    cls = environment_class(tasks[0], "ptc")
    row = dataset_rows(tasks[0], "ptc")[0]
    first, second = cls(), cls()
    first.reset(**row)
    assert first.programmatic_tool_call(code="print(6 * 7)").strip() == "42"  # a kernel is running now
    assert child_processes() > children and len(episode_folders() - folders) == 1
    first.reset(**row)  # reset without get_reward: the old episode is closed, a new one starts
    assert len(episode_folders() - folders) == 1
    second.reset(**row)
    second.programmatic_tool_call(code="x = 1")
    assert close_environments() == 2  # a trainer stopped mid-rollout: everything is released
    assert episode_folders() == folders and child_processes() <= children
    with pytest.raises(TRLEnvironmentError, match="before reset"):
        second.terminal(command="ls")
    # the model never calls claim_done and exhausts the episode's budget: the episode ends by the Episode's rules
    limited = environment_class(tasks[0], "ptc", limits=trl_env.Limits(max_tool_calls=2))()
    limited.reset(**row)
    limited.terminal(command="true")
    limited.terminal(command="true")
    with pytest.raises(TRLEnvironmentError, match=r"has ended \(max_tool_calls\)"):
        limited.terminal(command="true")
    assert limited.get_reward() == 0.0 and limited.trajectory.end_reason == "max_tool_calls"


# --- the Must-show: TRL's GRPOTrainer, two steps, smollm2, two tasks, PTC --------------------------------
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_grpo_trainer_two_steps_rewards_are_verifier_verdicts(tasks, tmp_path, no_leftovers, monkeypatch):
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from progagent_lib.generation.sources import load_model

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    model, tokenizer = load_model("smollm2")
    # Train the last two decoder layers only (the rest frozen, so the backward pass stops there): two real optimizer
    # steps of TRL's loop on the real weights that fit CI's 2 shared cores. TRL and the adapter are unchanged by it.
    for parameter in model.parameters():
        parameter.requires_grad_(False)
    for layer in model.model.layers[-2:]:
        layer.requires_grad_(True)
    recorded = []
    # A short system prompt (the harness's is ~300 tokens; the PTC tool schemas alone are ~850): on 2 CPU cores every
    # prompt token costs, and the row and the episode use the same file.
    system_prompt = tmp_path / "system.md"
    system_prompt.write_text("Solve the task with programs (programmatic_tool_call), then call claim_done.")
    factory = environment_factory(tasks, "ptc", on_trajectory=recorded.append, tokenizer=tokenizer,
                                  system_prompt=system_prompt)
    dataset = make_dataset(tasks, "ptc", scales=["v0"], seeds=[0], system_prompt=system_prompt)
    args = GRPOConfig(output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, max_steps=2, learning_rate=1e-6,
                      per_device_train_batch_size=2, num_generations=2, gradient_accumulation_steps=1,
                      max_completion_length=48, max_tool_calling_iterations=1, temperature=1.0, logging_steps=1,
                      activation_checkpointing=False,  # TRL's default recomputes activations: only a cost here
                      report_to="none", save_strategy="no", seed=0, dataloader_num_workers=0, disable_tqdm=True)
    trainer = GRPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[episode_metrics], args=args,
                          train_dataset=dataset, environment_factory=factory)

    logged = []  # per step: the reward of each rollout as TRL computed it, beside the episode we recorded

    class Capture(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            columns = {name: list(values) for name, values in trainer._logs["rewards"].items()}
            logged.append((columns, recorded[len(recorded) - 2:]))

    trainer.add_callback(Capture())
    trainer.train()

    assert trainer.state.global_step == 2
    assert len(recorded) == 4 and {t.task_id for t in recorded} == {t.id for t in tasks}
    for t in recorded:
        assert t.harness == "ptc" and t.scale == "v0" and t.seed == 0 and t.policy == "trl"
        assert t.end_reason and t.criteria  # scored by the verifier
        assert t.reward == float(all(c["passed"] for c in t.criteria))
    history = [h for h in trainer.state.log_history if "reward" in h]
    assert len(history) == 2
    for (columns, episodes), entry in zip(logged, history):
        # one column per environment class (NaN for the other class's rollouts); the reward is their nansum
        per_rollout = []
        for i in range(2):
            values = [columns[cls.__name__][i] for cls in factory.values() if columns[cls.__name__][i] == columns[cls.__name__][i]]
            assert len(values) == 1
            per_rollout.append(values[0])
        assert per_rollout == [t.reward for t in episodes]
        assert entry["reward"] == pytest.approx(sum(t.reward for t in episodes) / 2)
        assert entry["progagent/score"] == pytest.approx(sum(t.score for t in episodes) / 2)
    print("TRL rollouts:", [(t.task_id, t.end_reason, t.model_tool_calls, t.reward, round(t.score, 3)) for t in recorded])
