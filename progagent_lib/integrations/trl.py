"""TRL: the workbench's episodes as environments for `GRPOTrainer(environment_factory=...)` (TRL 1.16).

TRL's contract (read in trl/trainer/grpo_trainer.py of 1.16.0): `environment_factory` is a class (or a dict
of name -> class, with an `environment` column in the dataset); the trainer calls `Cls()` without arguments,
keeps the instances in a pool and reuses them, calling `reset(**row)` with the whole dataset row before each
rollout (a returned string would be appended to the last user message). The tools are the public functions
of the class, described to the model by `transformers.get_json_schema` (type hints and a Google-style
docstring); a tool's exception reaches the model as `{'error': '...'}`; `get_reward()` is called once per
rollout and its value is the reward (a column named after the class, weight 1).

This module makes one class per (task, harness) whose tools are exactly the episode's tools
(`Episode.tools`: under PTC `programmatic_tool_call`, `terminal` and `claim_done`; under DTC the task's own
tools too), so several tasks go in a dict, routed by the dataset's `environment` column:

    from progagent_lib import load_task
    from progagent_lib.integrations.trl import environment_factory, make_dataset
    harness = "..."   # a name in progagent_lib.harness.spec.HARNESSES
    tasks = [load_task("tasks/retail/restock_orders"), load_task("tasks/customer_support/sla_escalations")]
    trainer = GRPOTrainer(model, args=GRPOConfig(...), environment_factory=environment_factory(tasks, harness),
                          train_dataset=make_dataset(tasks, harness, scales=["v0"], seeds=range(8)),
                          reward_funcs=[episode_metrics])   # optional: logs R~ and the episode metrics

Each tool call the model makes is one `Episode.add_turn` (TRL runs the calls of a message one at a time and
shows the environment neither the message's text nor the call ids), so an episode's `turns` count calls.
Budgets, observation cuts, end reasons, the verifier and the trajectory are the Episode's. An episode that
ends (claim_done, a budget) is scored at once and its kernel and state copy are released; one the model
left without claim_done is ended by `get_reward()` as a turn without tool call (judged on the state as left;
with `episode_metrics` among the reward functions, its last plain answer is the final answer, as in
`run_episode`). An episode that ended by an infrastructure error gets the reward None: TRL then drops it
(advantage 0) instead of scoring it 0.
"""

from __future__ import annotations

import atexit
import inspect
import json
import logging
import re
import weakref
from pathlib import Path
from types import GenericAlias
from typing import Any, Callable, Iterable, Literal, Union

from ..harness.episode import INFRASTRUCTURE_END_REASONS, Episode, Limits
from ..harness.spec import DEFAULT_HARNESS, HarnessSpec, get_harness, model_tool_schemas
from ..harness.summary import SUMMARY_KEYS, episode_summary
from ..harness.trajectory import Trajectory, write_jsonl
from ..harness.turn import ToolCall, Turn
from ..task.scales import SCALES
from ..task.task import Task, load_task

logger = logging.getLogger(__name__)

TRL_VERSION = "1.16.0"  # the TRL release this adapter was written and tested against
ROW_KEYS = ("task", "scale", "seed")
POLICY_NAME = "trl"
RESERVED = frozenset({"reset", "get_reward"})  # TRL's own names on an environment class


class TRLEnvironmentError(RuntimeError):
    """The environment was used out of order: a tool before reset, a tool after the episode ended, ..."""


# --- the environment --------------------------------------------------------------------------------
_LIVE: "weakref.WeakSet[TRLEnvironment]" = weakref.WeakSet()


class TRLEnvironment:
    """Base of the generated classes: one Episode at a time, reset for every rollout.

    Public functions of a subclass are the tools TRL offers; the base defines only `reset` and
    `get_reward` (TRL's names), everything else is private. `trajectory` is the last scored episode.
    """

    # Set on each generated class by `environment_class`.
    task: Task
    harness: HarnessSpec
    limits: Limits | None = None
    error_mode: str = "is_error"
    system_prompt_file: str | None = None
    session_kwargs: dict = {}
    tokenizer: Any = None
    tool_schemas: list[dict] = []
    trajectory_file: Path | None = None
    _on_trajectory: Callable[[Trajectory], Any] | None = None  # private: a public function would become a tool
    _samples: dict = {}

    def __init__(self) -> None:
        self._episode: Episode | None = None
        self._final_text: str | None = None
        self.trajectory: Trajectory | None = None  # the current rollout's scored episode, once it ended
        self.row: dict = {}
        _LIVE.add(self)

    # --- TRL's interface -----------------------------------------------------------------------------
    def reset(self, **row: Any) -> str | None:
        """Start the episode of a dataset row (task, scale, seed; harness and params are checked when present).

        Clears everything of the previous rollout (closing its episode if it was never scored). Returns None:
        the row's prompt already holds the episode's opening messages (see `dataset_rows`).
        """
        self._release(abandoned_by="reset")
        self.trajectory, self._final_text, self.row = None, None, dict(row)
        scale, seed = self._check_row(row)
        key = (scale, seed)
        sample = type(self)._samples.get(key, 0)
        type(self)._samples[key] = sample + 1
        episode = Episode(
            self.task,
            scale,
            seed,
            self.harness,
            limits=self.limits,
            policy_name=POLICY_NAME,
            sample=sample,
            error_mode=self.error_mode,
            system_prompt=self.system_prompt_file,
            session_kwargs=dict(self.session_kwargs),
            tokenizer=self.tokenizer,
        )
        try:
            if episode.tools != self.tool_schemas:
                raise TRLEnvironmentError(
                    f"{type(self).__name__}: the episode offers other tools than the class was "
                    "made with (the task changed since?); make the class again"
                )
            self._check_instance(row, episode)
        except BaseException:
            episode.close()
            raise
        self._episode = episode
        return None

    def get_reward(self) -> float | None:
        """The binary verifier reward R of this rollout's episode (None if it ended by an infrastructure error).

        An episode still running (the model stopped calling tools, or TRL stopped the rollout) is ended here as a
        turn without tool call and judged on the state as left. Idempotent until the next reset.
        """
        if self.trajectory is None:
            if self._episode is None:
                raise TRLEnvironmentError("get_reward() before reset(): there is no episode to score")
            self._finish(self._final_text)
        trajectory = self.trajectory
        assert trajectory is not None
        if trajectory.end_reason in INFRASTRUCTURE_END_REASONS:
            return None
        return float(trajectory.reward)

    # --- what the generated tools call -----------------------------------------------------------
    def _call(self, name: str, args: tuple, kwargs: dict) -> str:
        episode = self._episode
        if episode is None:
            if self.trajectory is not None:
                raise TRLEnvironmentError(
                    f"the episode has ended ({self.trajectory.end_reason}); no more tool calls are accepted. "
                    "Call reset(**row) to start another episode."
                )
            raise TRLEnvironmentError(f"{name} was called before reset(): no episode is running")
        params = list(_schema_properties(self._schema(name)))
        if len(args) > len(params):
            raise TypeError(f"{name} takes {len(params)} arguments, {len(args)} given")
        arguments = {**dict(zip(params, args)), **kwargs}
        try:
            added = episode.add_turn(Turn(tool_calls=[ToolCall(name, arguments)]))  # TRL shows one call at a time
        except BaseException as exc:
            # The harness itself failed (not the model): the episode ends as an infrastructure error.
            logger.exception("the harness failed to run %s", name)
            episode.fail(f"the harness failed to run {name}: {type(exc).__name__}: {exc}")
            self._score()
            raise TRLEnvironmentError(f"the environment failed to run {name}: {type(exc).__name__}: {exc}") from exc
        if episode.finished:
            self._score()
        tool_messages = [m for m in added if m.get("role") == "tool"]
        return tool_messages[0]["content"] if tool_messages else ""

    def _schema(self, name: str) -> dict:
        for schema in self.tool_schemas:
            if schema["function"]["name"] == name:
                return schema
        raise KeyError(name)

    def _finish(self, text: str | None) -> None:
        """End a running episode with a plain turn (`text`, the model's last answer, or "") and score it."""
        episode = self._episode
        if episode is None:
            return
        if not episode.finished:
            episode.add_turn(Turn(text=text or ""))
        self._score()

    def _score(self) -> None:
        episode, self._episode = self._episode, None
        if episode is None:
            return
        try:
            trajectory = episode.to_trajectory()
        except Exception as exc:
            logger.exception("scoring an episode of %s failed", self.task.id)
            episode.close()
            trajectory = episode.trajectory
            trajectory.error = trajectory.error or f"scoring failed: {type(exc).__name__}: {exc}"
            trajectory.end_reason = "policy_error"
        self.trajectory = trajectory
        if self.trajectory_file is not None:
            write_jsonl(trajectory, self.trajectory_file)
        if self._on_trajectory is not None:
            self._on_trajectory(trajectory)  # a staticmethod on the class

    def _release(self, abandoned_by: str = "close") -> None:
        episode, self._episode = self._episode, None
        if episode is not None:
            logger.warning(
                "%s: an episode of %s (%s, seed %s) was never scored; closed by %s()",
                type(self).__name__,
                self.task.id,
                episode.trajectory.scale,
                episode.trajectory.seed,
                abandoned_by,
            )
            episode.close()

    def _close(self) -> None:
        """Release the running episode, if any (its kernel and state copy). TRL never calls this; we do at exit."""
        self._release()

    def __del__(self) -> None:
        try:
            self._release(abandoned_by="__del__")
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    # --- checks ------------------------------------------------------------------------------------
    def _check_row(self, row: dict) -> tuple[str, int]:
        missing = [key for key in ROW_KEYS if key not in row or row[key] is None]
        if missing:
            raise ValueError(
                f"{type(self).__name__}.reset(): the dataset row has no {', '.join(missing)}; every row "
                f"needs the columns {', '.join(ROW_KEYS)} (build rows with "
                "progagent_lib.integrations.trl.dataset_rows)"
            )
        if not _names_task(row["task"], self.task):
            raise ValueError(
                f"{type(self).__name__}.reset(): unknown task {row['task']!r}: this environment class "
                f"serves {self.task.id!r} only (several tasks: pass environment_factory(tasks) as a dict "
                "and give each row an `environment` column)"
            )
        harness = row.get("harness")
        if harness is not None and harness != self.harness.name:
            raise ValueError(
                f"{type(self).__name__}.reset(): the row asks for harness {harness!r}, this class runs "
                f"{self.harness.name!r}"
            )
        scale = row["scale"]
        if scale not in SCALES:
            raise ValueError(
                f"{type(self).__name__}.reset(): unknown scale {scale!r}; expected one of {', '.join(SCALES)}"
            )
        seed = row["seed"]
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ValueError(f"{type(self).__name__}.reset(): the seed must be an integer, got {seed!r}")
        params = row.get("params")
        if params is not None:
            given = json.loads(params) if isinstance(params, str) else params
            if given != self.task.params_for(seed):
                raise ValueError(
                    f"{type(self).__name__}.reset(): the row's params {given!r} are not the instance "
                    f"parameters of {self.task.id} seed {seed} ({self.task.params_for(seed)!r})"
                )
        return scale, seed

    def _check_instance(self, row: dict, episode: Episode) -> None:
        """The prompt TRL will render must be the episode's opening messages (system prompt, instruction)."""
        prompt = row.get("prompt")
        if prompt is None:
            raise ValueError(
                f"{type(self).__name__}.reset(): the dataset row has no prompt; use dataset_rows() so the "
                "prompt is the episode's opening messages"
            )
        expected = [{"role": m["role"], "content": m["content"]} for m in episode.messages]
        given = (
            [{"role": m.get("role"), "content": m.get("content")} for m in prompt]
            if isinstance(prompt, list)
            else prompt
        )
        if given != expected:
            raise ValueError(
                f"{type(self).__name__}.reset(): the row's prompt is not the opening messages of "
                f"{self.task.id} ({episode.trajectory.scale}, seed {episode.trajectory.seed}) under "
                f"{self.harness.name}: build rows with dataset_rows() for the same harness and system prompt"
            )


def _names_task(value: Any, task: Task) -> bool:
    if not isinstance(value, str):
        return False
    if value == task.id:
        return True
    try:
        return Path(value).resolve() == task.root
    except (OSError, ValueError):
        return False


# --- tools as functions of the class -------------------------------------------------------------
_JSON_TO_PY: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
    "null": type(None),
}
# get_json_schema ends a tool's description at the first of these words, anywhere in the text.
_SECTION_WORDS = {"Args:": "Arguments:", "Returns:": "Return value:", "Raises:": "Errors raised:"}
_SECTION_RE = re.compile("|".join(re.escape(w) for w in _SECTION_WORDS))


def docstring_text(text: str) -> str:
    """`text` as it can stand in a Google docstring that transformers parses back unchanged: its section words
    (Args:, Returns:, Raises:, which end a description wherever they appear) are spelled out."""
    return _SECTION_RE.sub(lambda m: _SECTION_WORDS[m.group()], text)


def _schema_properties(schema: dict) -> dict:
    return (schema["function"].get("parameters") or {}).get("properties") or {}


def _annotation(prop: dict) -> Any:
    """A Python type hint that get_json_schema turns back into `prop`'s type."""
    if "enum" in prop and prop["enum"]:
        return Literal[tuple(prop["enum"])]
    kind = prop.get("type")
    if kind is None:
        return Any
    if isinstance(kind, list):
        members = tuple(_annotation({**prop, "type": k}) for k in kind)
        return Union[members] if len(members) > 1 else members[0]
    if kind == "array" and isinstance(prop.get("items"), dict) and prop["items"]:
        return GenericAlias(list, (_annotation(prop["items"]),))  # list[item]: a hint built at run time
    return _JSON_TO_PY.get(kind, Any)


def _tool_function(schema: dict, owner: str) -> Callable:
    """A function named after the tool, with the schema's parameters as its signature and docstring."""
    fn_schema = schema["function"]
    name = fn_schema["name"]
    props = _schema_properties(schema)
    required = set((fn_schema.get("parameters") or {}).get("required") or [])

    def tool(self: TRLEnvironment, *args: Any, **kwargs: Any) -> str:
        return self._call(name, args, kwargs)

    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = [docstring_text(fn_schema.get("description") or name).strip() or name]
    if props:
        lines += ["", "Args:"]
    for pname, prop in props.items():
        annotations[pname] = _annotation(prop)
        default = inspect.Parameter.empty if pname in required else prop.get("default")
        parameters.append(
            inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotations[pname])
        )
        description = " ".join((prop.get("description") or pname).split())
        lines.append(f"    {pname}: {docstring_text(description)}")
    tool.__name__ = name
    tool.__qualname__ = f"{owner}.{name}"
    tool.__doc__ = "\n".join(lines)
    tool.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    tool.__annotations__ = annotations
    return tool


def _class_name(task: Task, harness: str) -> str:
    return "ProgAgent_" + re.sub(r"\W", "_", task.id) + "_" + harness


def environment_class(
    task: Task | str | Path,
    harness: str = DEFAULT_HARNESS,
    *,
    limits: Limits | None = None,
    error_mode: str = "is_error",
    system_prompt: str | Path | None = None,
    session_kwargs: dict | None = None,
    tokenizer: Any = None,
    trajectory_file: str | Path | None = None,
    on_trajectory: Callable[[Trajectory], Any] | None = None,
) -> type[TRLEnvironment]:
    """The TRL environment class of one task under one harness (`GRPOTrainer(environment_factory=cls)`).

    Its tools are the episode's tools (`Episode.tools`), one function each on the class, so TRL describes them to
    the model with `transformers.get_json_schema`. `limits` default to the task's; `system_prompt` (a file) replaces
    the harness's prompt (pass the same to `dataset_rows`); `session_kwargs` go to `Session`/`PTCRuntime`
    (e.g. `pool=KernelPool(...)`); `tokenizer` counts tokens exactly. Every scored episode's trajectory is
    appended to `trajectory_file` (JSON lines) and handed to `on_trajectory`.
    """
    task = task if isinstance(task, Task) else load_task(task)
    spec = get_harness(harness)
    name = _class_name(task, spec.name)
    schemas = model_tool_schemas(spec, task.tool_schemas())  # what Session.tool_schemas() gives an episode
    attributes: dict[str, Any] = {
        "task": task,
        "harness": spec,
        "limits": limits,
        "error_mode": error_mode,
        "system_prompt_file": str(system_prompt) if system_prompt else None,
        "session_kwargs": dict(session_kwargs or {}),
        "tokenizer": tokenizer,
        "tool_schemas": schemas,
        "trajectory_file": Path(trajectory_file) if trajectory_file else None,
        "_on_trajectory": staticmethod(on_trajectory) if on_trajectory else None,
        "_samples": {},
        "__module__": __name__,
        "__doc__": f"{task.id} under {spec.name}: a TRL environment (see progagent_lib.integrations.trl).",
    }
    cls = type(name, (TRLEnvironment,), attributes)
    for schema in schemas:
        tool_name = schema["function"]["name"]
        if tool_name in RESERVED or tool_name.startswith("_") or not tool_name.isidentifier():
            raise ValueError(f"task {task.id}: a tool named {tool_name!r} cannot be a TRL environment tool")
        setattr(cls, tool_name, _tool_function(schema, name))
    check_schemas(cls)
    return cls


def check_schemas(cls: type[TRLEnvironment]) -> None:
    """What TRL will show the model (get_json_schema of each tool) must be the episode's schemas: same names,
    descriptions (with section words spelled out), parameters, types and required parameters."""
    from transformers.utils import get_json_schema

    for schema in cls.tool_schemas:
        fn = schema["function"]
        got = get_json_schema(getattr(cls, fn["name"]))["function"]
        want_params = fn.get("parameters") or {}
        problems = []
        if got["description"] != docstring_text(fn.get("description") or fn["name"]).strip():
            problems.append("description")
        got_props = got["parameters"].get("properties", {})
        if list(got_props) != list(want_params.get("properties", {})):
            problems.append("parameter names")
        if sorted(got["parameters"].get("required", [])) != sorted(want_params.get("required", [])):
            problems.append("required parameters")
        for pname, prop in want_params.get("properties", {}).items():
            have = got_props.get(pname, {})
            want_type = prop.get("type")
            have_type = have.get("type")
            if isinstance(want_type, list):  # get_json_schema writes [T, "null"] as T + nullable
                want_type = sorted(t for t in want_type if t != "null")
                want_type = want_type[0] if len(want_type) == 1 else want_type
                have_type = sorted(have_type) if isinstance(have_type, list) else have_type
            if want_type != have_type:
                problems.append(f"type of {pname}")
        if problems:
            raise ValueError(
                f"{cls.__name__}.{fn['name']}: transformers.get_json_schema does not reproduce the "
                f"episode's schema ({', '.join(problems)})"
            )


def environment_factory(
    tasks: Task | str | Path | Iterable[Task | str | Path], harness: str = DEFAULT_HARNESS, **options: Any
) -> type[TRLEnvironment] | dict[str, type[TRLEnvironment]]:
    """`environment_factory` for GRPOTrainer: one class for one task, else a dict {task id: class}
    (TRL then routes each row by its `environment` column, which `dataset_rows` writes for several tasks).
    `options` go to `environment_class`."""
    task_list = _task_list(tasks)
    classes = {task.id: environment_class(task, harness, **options) for task in task_list}
    if len(classes) != len(task_list):
        raise ValueError("the same task is listed twice")
    return next(iter(classes.values())) if len(classes) == 1 else classes


# --- the dataset ---------------------------------------------------------------------------------
def dataset_rows(
    tasks: Task | str | Path | Iterable[Task | str | Path],
    harness: str = DEFAULT_HARNESS,
    *,
    scales: Iterable[str] = ("v0",),
    seeds: Iterable[int] = (0,),
    system_prompt: str | Path | None = None,
    environment_column: bool | None = None,
) -> list[dict]:
    """One row per (task, scale, seed): `prompt` (the episode's opening messages: the harness's system prompt and
    the instance's rendered instruction), `task`, `scale`, `seed`, `harness`, `params` (JSON text) and, for several
    tasks (or `environment_column=True`), `environment` (the task id, the key of `environment_factory`'s dict)."""
    task_list = _task_list(tasks)
    spec = get_harness(harness)
    with_environment = len(task_list) > 1 if environment_column is None else environment_column
    system = spec.system_prompt(system_prompt)
    scales, seeds = list(scales), list(seeds)
    for scale in scales:
        if scale not in SCALES:
            raise ValueError(f"unknown scale {scale!r}; expected one of {', '.join(SCALES)}")
    rows = []
    for task in task_list:
        for scale in scales:
            for seed in seeds:
                params = task.params_for(int(seed))
                row = {
                    "prompt": [
                        {"role": "system", "content": system},
                        {"role": "user", "content": task.instruction(params)},
                    ],
                    "task": task.id,
                    "scale": scale,
                    "seed": int(seed),
                    "harness": spec.name,
                    "params": json.dumps(params, sort_keys=True),
                }
                if with_environment:
                    row["environment"] = task.id
                rows.append(row)
    return rows


def make_dataset(tasks: Any, harness: str = DEFAULT_HARNESS, **kwargs: Any) -> Any:
    """`dataset_rows` as a `datasets.Dataset` (the type GRPOTrainer takes)."""
    from datasets import Dataset

    return Dataset.from_list(dataset_rows(tasks, harness, **kwargs))


def _task_list(tasks: Any) -> list[Task]:
    if isinstance(tasks, (Task, str, Path)):
        tasks = [tasks]
    task_list = [t if isinstance(t, Task) else load_task(t) for t in tasks]
    if not task_list:
        raise ValueError("no tasks given")
    return task_list


# --- an optional reward function: the final answer and the episode metrics ------------------------
def episode_metrics(
    completions: list, environments: list | None = None, log_metric: Callable | None = None, **kwargs: Any
) -> list[None]:
    """A reward function that adds nothing to the reward (it returns None for every rollout) and, for TRL:

    - ends each episode the model left without claim_done with its last plain answer as the final answer
      (TRL shows the environment tool calls only), so the verifier judges it as `run_episode` would;
    - logs the batch's means of the episode report (`harness.metrics.episode_report`: R, R~ and the episode's
      counters, over the episodes not ended by an infrastructure error) as `progagent/<name>`, the share of those
      ended by claim_done, and the share ended by an infrastructure error. One definition: `episode_summary`.
    List it first among `reward_funcs` (TRL calls get_reward after the reward functions given to it).
    """
    environments = environments or []
    trajectories = []
    for completion, env in zip(completions, environments):
        if not isinstance(env, TRLEnvironment):
            continue
        if env.trajectory is None and env._episode is not None:
            env._final_text = _final_text(completion)
            env._finish(env._final_text)
        if env.trajectory is not None:
            trajectories.append(env.trajectory)
    if log_metric is not None and trajectories:
        summary = episode_summary(trajectories)
        if summary["errored_episodes"] < summary["episodes"]:  # means over no scored episode would read as zeros
            for name, key in SUMMARY_KEYS.items():
                log_metric(f"progagent/{name}", summary[key])
            log_metric("progagent/claim_done", summary["claim_done_rate"])
        log_metric("progagent/infrastructure_errors", summary["errored_episodes"] / summary["episodes"])
    return [None] * len(completions)


def _final_text(completion: Any) -> str:
    """The text of the rollout's last assistant message when it made no tool call, else ""."""
    if isinstance(completion, str):
        return completion
    if not isinstance(completion, list) or not completion:
        return ""
    last = completion[-1]
    if not isinstance(last, dict) or last.get("role") != "assistant" or last.get("tool_calls"):
        return ""
    content = last.get("content") or ""
    if isinstance(content, list):
        content = "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return str(content)


# --- cleanup -------------------------------------------------------------------------------------
def close_environments() -> int:
    """Release every running episode of every TRL environment instance (kernels, state copies); returns how many
    were running. Registered at exit; call it after a trainer stopped mid-rollout."""
    count = 0
    for env in list(_LIVE):
        if env._episode is not None:
            count += 1
            env._close()
    return count


atexit.register(close_environments)

__all__ = [
    "TRL_VERSION",
    "TRLEnvironment",
    "TRLEnvironmentError",
    "check_schemas",
    "close_environments",
    "dataset_rows",
    "docstring_text",
    "environment_class",
    "environment_factory",
    "episode_metrics",
    "make_dataset",
]
