"""verifiers (0.4.x, its `verifiers.v1` API): the workbench's tasks as a verifiers taskset, run by `vf-eval`.

verifiers 0.4 finds an environment by a *taskset id*: `vf-eval progagent` imports the top-level module
`progagent` (ids map `-` to `_`), takes the one `Taskset` subclass its `__all__` exports, and, because the same
module exports a `Harness` subclass, runs that harness by default. That module is the small wrapper package
`environments/progagent/` (`pip install -e environments/progagent`), which re-exports the classes below.

- `ProgAgentTaskset` (config `ProgAgentTasksetConfig`: `tasks_dir`, `tasks`, `scale`, `seeds`, `harness`, `rows`,
  `limits`) yields one `ProgAgentTask` per (task, scale, seed, harness). Its `ProgAgentData` carries that identity
  and the instance parameters (`task.params_for(seed)`); the prompt is the rendered instruction. The rows of a
  GRPO group (`vf-eval -r N`) share (task, scale, seed), hence one starting state.
- `ProgAgentHarness` is the agent program. verifiers allows a harness to run its loop in-process as long as
  every model call goes through the rollout's interception `endpoint` (which forwards to the `-b/--client.base-url`
  server and records each call in the trace). It is a thin driver of one `Episode`: it asks the model for a turn
  (OpenAI chat completions with `tools=episode.tools`), hands it to `episode.add_turn`, and sends
  `episode.messages` back, until the episode ends. Budgets, observation cuts, end reasons, the verifier and the
  metrics are the Episode's. Under PTC the model sees `programmatic_tool_call`, `terminal` and `claim_done`; under
  DTC and Hybrid the task's own tools too.
- `ProgAgentTask.verifier_reward` is the reward: the binary verifier reward R of the episode; the dense score R~
  and the episode's counters are metrics (`progagent_metrics`). The episode's kernel and private state copy are
  released when it ends, and on every error path (a model error, a cancelled or timed-out rollout).

    vf-eval progagent -m my-model --client.base-url http://127.0.0.1:8000/v1 --no-push \\
        --env.taskset.tasks '["retail/restock_orders"]' --env.taskset.harness ptc --env.taskset.seeds '[0, 1]'

verifiers 0.3.x (the classic `MultiTurnEnv`/`vf-eval ENV -b URL` API) pins mcp<2 and cannot share an environment
with this package (mcp>=2); this module targets 0.4.0. verifiers pins mcp==2.0.0 and openai<3, so it lives in its
own virtual environment (see the README).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import verifiers.v1 as vf
from pydantic import Field, field_validator
from verifiers.v1.runtimes import ProgramResult
from verifiers.v1.utils.aio import run_shielded

from ..harness.episode import Episode, Limits
from ..harness.spec import DEFAULT_HARNESS, get_harness
from ..harness.metrics import EPISODE_REPORT, episode_report
from ..harness.trajectory import Trajectory, write_jsonl
from ..harness.turn import Turn, turn_from_openai
from ..task import SCALES, Task
from ..task.task import find_task_dirs
from ._tasks import resolve_task as _resolve_task

VERIFIERS_VERSION = "0.4.0"  # the verifiers release this adapter is written and tested against
ROW_KEYS = ("task", "scale", "seed")


class ProgAgentInputError(ValueError):
    """Bad input: a row without task/scale/seed, an unknown task or scale, a harness that does not exist."""


# --- tasks ------------------------------------------------------------------------------------------
def resolve_task(name: str, tasks_dir: str | Path) -> Task:
    """The task `name` (an id such as `retail/restock_orders`) below `tasks_dir`, loaded once per process."""
    return _resolve_task(name, tasks_dir, ProgAgentInputError)


# --- the verifiers types ----------------------------------------------------------------------------
class ProgAgentData(vf.TaskData):
    """One sample: (task, scale, seed) under a harness, and the instance's parameters (drawn from the seed)."""

    task: str
    scale: str
    seed: int
    harness: str = DEFAULT_HARNESS
    params: dict = Field(default_factory=dict)
    tasks_dir: str = "tasks"
    limits: dict = Field(default_factory=dict)
    error_mode: str = "is_error"


class ProgAgentTasksetConfig(vf.TasksetConfig):
    """Which episodes the taskset yields: every task in `tasks` (all of `tasks_dir` when empty) × `seeds`, at
    `scale`, under `harness`; or, when `rows` is given, exactly those rows ({task, scale, seed[, harness]})."""

    tasks_dir: str = "tasks"
    tasks: list[str] = Field(default_factory=list)
    scale: str = "v0"
    seeds: list[int] = Field(default_factory=lambda: [0])
    harness: str = DEFAULT_HARNESS
    rows: list[dict] = Field(default_factory=list)
    limits: dict = Field(default_factory=dict)  # Limits overrides, e.g. {"max_turns": 40}
    error_mode: str = "is_error"

    @field_validator("harness")
    @classmethod
    def _known_harness(cls, value: str) -> str:
        get_harness(value)  # raises ValueError naming the harnesses
        return value

    @field_validator("limits")
    @classmethod
    def _known_limits(cls, value: dict) -> dict:
        unknown = sorted(set(value) - set(Limits.__dataclass_fields__))
        if unknown:
            raise ValueError(f"unknown limits {unknown}; known: {sorted(Limits.__dataclass_fields__)}")
        return value


class ProgAgentTask(vf.Task[ProgAgentData, vf.State, vf.TaskConfig]):
    """Scored from what the harness recorded in `trace.info['progagent']` (the episode's own verdict)."""

    @property
    def key(self) -> str:
        d = self.data
        return f"{d.task}@{d.scale}#seed={d.seed}/{d.harness}"

    @vf.reward
    async def verifier_reward(self, trace) -> float:
        """The binary verifier reward R (1 iff every criterion passed); 0 when the episode produced no verdict."""
        info = trace.info.get("progagent") or {}
        return float(info.get("reward") or 0.0)

    @vf.metric
    async def progagent_metrics(self, trace) -> dict:
        """The episode's report (`harness.metrics.episode_report`: R, R~ and the episode's counters), logged as
        `progagent_<name>`; None for each when the episode produced no report."""
        info = trace.info.get("progagent") or {}
        return {f"progagent_{name}": None if info.get(name) is None else float(info[name]) for name in EPISODE_REPORT}


def make_data(
    row: Mapping[str, Any],
    *,
    tasks_dir: str | Path = "tasks",
    harness: str = DEFAULT_HARNESS,
    limits: dict | None = None,
    error_mode: str = "is_error",
) -> ProgAgentData:
    """A row ({task, scale, seed[, harness]}) as task data, checked: missing keys, unknown task/scale/harness raise."""
    if not isinstance(row, Mapping):
        raise ProgAgentInputError(f"a row must be a mapping with {list(ROW_KEYS)}, got {type(row).__name__}")
    missing = [k for k in ROW_KEYS if row.get(k) is None]
    if missing:
        raise ProgAgentInputError(f"row {dict(row)!r} lacks {missing}: every row names its task, scale and seed")
    if row["scale"] not in SCALES:
        raise ProgAgentInputError(f"row {dict(row)!r}: unknown scale {row['scale']!r} (one of {list(SCALES)})")
    try:
        seed = int(row["seed"])
    except (TypeError, ValueError):
        raise ProgAgentInputError(f"row {dict(row)!r}: the seed must be an integer") from None
    harness = row.get("harness") or harness
    try:
        get_harness(harness)
    except ValueError as exc:
        raise ProgAgentInputError(f"row {dict(row)!r}: {exc}") from None
    task = resolve_task(row["task"], tasks_dir)
    params = task.params_for(seed)
    rel = task.id
    return ProgAgentData(
        name=f"{rel}@{row['scale']}#seed={seed}/{harness}",
        id=f"{rel}@{row['scale']}#{seed}",
        prompt=task.instruction(params),
        task=str(row["task"]).strip("/"),
        scale=row["scale"],
        seed=seed,
        harness=harness,
        params=params,
        tasks_dir=str(Path(tasks_dir).resolve()),
        limits=dict(limits or {}),
        error_mode=error_mode,
    )


class ProgAgentTaskset(vf.Taskset[ProgAgentTask, ProgAgentTasksetConfig]):
    """The workbench's tasks: one task per (task, scale, seed, harness)."""

    def load(self) -> Iterator[ProgAgentTask]:
        c = self.config
        if c.rows:
            rows = c.rows
        else:
            root = Path(c.tasks_dir).resolve()
            names = c.tasks or [p.relative_to(root).as_posix() for p in find_task_dirs(root)]
            if not names:
                raise ProgAgentInputError(f"no task under {root}")
            rows = [{"task": name, "scale": c.scale, "seed": seed} for name in names for seed in c.seeds]
        # Checked in full before the first task is handed out: a bad row fails the run before any episode starts.
        data = [
            make_data(row, tasks_dir=c.tasks_dir, harness=c.harness, limits=c.limits, error_mode=c.error_mode)
            for row in rows
        ]
        for d in data:
            yield ProgAgentTask(d, c.task)


# --- the harness: one Episode, driven through the rollout's interception endpoint ------------------------
class ProgAgentHarnessConfig(vf.HarnessConfig):
    trajectories: str | None = None  # JSON-lines file each finished trajectory is appended to
    session_kwargs: dict = Field(default_factory=dict)  # to Session / PTCRuntime (program_timeout, ...)


def open_episode(data: ProgAgentData, session_kwargs: dict | None = None, policy_name: str = "verifiers") -> Episode:
    """The Episode of a task's data (instantiates the task's state copy; a kernel starts on the first program)."""
    task = resolve_task(data.task, data.tasks_dir)
    limits = Limits.for_task(task).with_overrides(**data.limits)
    return Episode(
        task,
        data.scale,
        data.seed,
        data.harness,
        limits=limits,
        policy_name=policy_name,
        error_mode=data.error_mode,
        session_kwargs=session_kwargs,
    )


def turn_from_message(message: Any, usage: Any = None, *, cut: bool = False) -> Turn:
    """An OpenAI chat-completion message (the openai client's object) as the episode's turn; unreadable arguments
    become parse errors."""
    return turn_from_openai(message.model_dump(), usage.model_dump() if usage is not None else None, cut=cut)


def summary(trajectory: Trajectory) -> dict:
    """What the trace records of an ended episode (read by the task's reward and metric): its identity, end, final
    answer and criteria, and its report (`harness.metrics.episode_report`: R, R~ and the counters)."""
    return {
        "task": trajectory.task_id,
        "scale": trajectory.scale,
        "seed": trajectory.seed,
        "harness": trajectory.harness,
        "end_reason": trajectory.end_reason,
        "final_answer": trajectory.final_answer,
        "criteria": [{"name": c.get("name"), "passed": c.get("passed")} for c in trajectory.criteria or []],
        **episode_report(trajectory),
    }


class ProgAgentHarness(vf.Harness[ProgAgentHarnessConfig]):
    """Drives one `Episode` per rollout in-process; every model call goes through the interception endpoint."""

    APPENDS_SYSTEM_PROMPT = True  # the episode's own system prompt (the harness's) is sent as a system message
    NEEDS_CONTAINER = False  # the PTC kernel is confined by the workbench's own sandbox
    SUPPORTS_MCP = False

    async def launch(self, ctx, trace, runtime, endpoint, secret, mcp_urls, data, **_: Any) -> ProgramResult:
        from openai import AsyncOpenAI

        if not isinstance(data, ProgAgentData):  # a wire view: re-validate (and check) the task's fields
            data = ProgAgentData.model_validate(data.model_dump())
        episode = await run_shielded(
            asyncio.to_thread(open_episode, data, self.config.session_kwargs, f"verifiers:{ctx.model}")
        )
        try:
            sampling = {
                k: v
                for k, v in (ctx.sampling.model_dump(exclude_none=True) if ctx.sampling else {}).items()
                if k in ("temperature", "top_p", "max_tokens")
            }
            async with AsyncOpenAI(base_url=endpoint, api_key=secret, max_retries=2) as client:
                while not episode.finished:
                    completion = await client.chat.completions.create(
                        model=ctx.model, messages=episode.messages, tools=episode.tools, **sampling
                    )
                    choice = completion.choices[0]
                    turn = turn_from_message(choice.message, completion.usage)
                    turn.cut = choice.finish_reason == "length" and not turn.tool_calls
                    # Tools (programs in the kernel) block: run them off the event loop; a cancelled rollout
                    # waits for the running call before the episode is closed below.
                    await run_shielded(asyncio.to_thread(episode.add_turn, turn))
            trajectory = await run_shielded(asyncio.to_thread(episode.to_trajectory))
            trace.info["progagent"] = summary(trajectory)
            if self.config.trajectories:
                write_jsonl(trajectory, self.config.trajectories)
            return ProgramResult(exit_code=0, stdout=f"{trajectory.end_reason} reward={trajectory.reward}", stderr="")
        finally:
            await run_shielded(asyncio.to_thread(episode.close))


# --- the env: verifiers' single-agent env, on the local (subprocess) runtime by default ------------------
class ProgAgentEnvConfig(vf.SingleAgentEnvConfig):
    """verifiers' default agent runtime is a remote (Prime) sandbox; the episode runs in this process, confined by
    the workbench's own sandbox, so the agent's runtime defaults to a local subprocess workdir."""

    agent: vf.AgentConfig = vf.AgentConfig(runtime=vf.SubprocessConfig())


class ProgAgentEnv(vf.Env[ProgAgentEnvConfig]):
    """One agent seat playing each task (as verifiers' `SingleAgentEnv`)."""

    async def run(self, task, agents) -> None:
        await agents.agent.run(task)


__all__ = [
    "VERIFIERS_VERSION",
    "ProgAgentData",
    "ProgAgentEnv",
    "ProgAgentEnvConfig",
    "ProgAgentHarness",
    "ProgAgentHarnessConfig",
    "ProgAgentInputError",
    "ProgAgentTask",
    "ProgAgentTaskset",
    "ProgAgentTasksetConfig",
    "make_data",
    "open_episode",
    "resolve_task",
    "turn_from_message",
]
