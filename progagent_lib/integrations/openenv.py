"""OpenEnv (`openenv-core` 0.3.0): the workbench's episode as an OpenEnv environment server.

`ProgAgentEnvironment` is an OpenEnv `Environment` over one `Episode` at a time: `reset(seed, episode_id,
task=..., scale=..., harness=..., limits=..., error_mode=...)` starts an episode of (task, scale, seed) under a harness,
`step(action)` hands one assistant turn to `episode.add_turn`, and `state` reports the episode. The rules
(budgets, observation cuts, end reasons, the verifier, the trajectory and its metrics) are the Episode's;
this module only translates between OpenEnv's pydantic types and the episode.

Actions (all through `step`, over WebSocket `/ws` or HTTP):

- `ProgAgentAction`: one assistant turn (a `harness.turn.Turn` on the wire), as a trainer's model produced it:
  `tool_calls` (name, arguments, id), `text`, `reasoning`, `parse_errors`, optional `prompt_tokens`/`completion_tokens`
  (the exact context size), `cut` (the turn ran out of tokens). The observation holds the messages the turn added (the assistant
  message as recorded, then one tool message per call, then feedback for unreadable calls).
- OpenEnv's MCP tool mode: `ListToolsAction` lists the tools the model sees under the harness (`episode.tools`
  as MCP tools), `CallToolAction(tool_name, arguments)` is a turn with that one call; `MCPToolClient` works.

The reward is the verifier's binary R, given on the step that ends the episode (0.0 before); the dense
score R~, the criteria, the end reason and the episode's metrics come with it. The episode's kernel and its
private copy of the state are released as soon as it ends, and on reset, close, a dropped connection
(OpenEnv closes a WebSocket session's environment) and an idle timeout (`session_timeout`).

Serve with `make_app(OpenEnvServerConfig(...), token=...)` (OpenEnv's own `create_app`: `/ws`, `/reset`, `/step`,
`/state`, `/schema`, `/health`, `/metadata`), or `progagent openenv serve` (port 8766 by default). OpenEnv has no
authentication, so the app is wrapped in the workbench's request guard (`harness/http_guard.py`, the one in front of
`progagent serve --transport http` too): an allowed Host (loopback names and the bind address, plus `allowed_hosts`),
no foreign Origin (HTTP and the WebSocket handshake), and a per-start bearer token on every request; the serve
command makes one and prints it, or reads `--token-file`. Drive with `ProgAgentEnvClient` (an OpenEnv `EnvClient`:
async, `.sync()`; it sends `token=` or $PROGAGENT_OPENENV_TOKEN), or OpenEnv's `GenericEnvClient` / `MCPToolClient`
through `token_client(...)`. OpenEnv's HTTP `/reset` and `/step` make a fresh environment per request (stateless), so a
whole episode needs the WebSocket: `/step` over HTTP answers 409 with a message saying so. The JSON-RPC `/mcp`
route needs a FastMCP server inside the environment, which this adapter does not have: for a real MCP
server over an episode use `progagent serve`.

    token = new_token()
    app = make_app(OpenEnvServerConfig(tasks_dir="tasks", scale="v0", harness=DEFAULT_HARNESS), token=token, port=8766)
    # uvicorn.run(app, host="127.0.0.1", port=8766); then, in the trainer:
    with ProgAgentEnvClient(base_url="http://127.0.0.1:8766", token=token).sync() as env:
        result = env.reset(task="retail/restock_orders", seed=0)
        result = env.step(ProgAgentAction.call("programmatic_tool_call", code="print(tools.list_files())"))
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import threading
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Sequence
from urllib.parse import urlsplit

from openenv.core import EnvClient
from openenv.core.client_types import StepResult
from openenv.core.env_server import (
    Action,
    CallToolAction,
    CallToolObservation,
    ConcurrencyConfig,
    Environment,
    ListToolsAction,
    ListToolsObservation,
    Observation,
    State,
    Tool,
    create_app,
)
from openenv.core.env_server.mcp_types import ToolError as MCPToolError
from openenv.core.env_server.mcp_types import ToolErrorType
from openenv.core.env_server.types import EnvironmentMetadata
from pydantic import BaseModel, Field
from websockets.asyncio.client import ClientConnection
from websockets.asyncio.client import connect as ws_connect
from websockets.exceptions import InvalidStatus

from ..harness.episode import Episode, Limits, start_agent
from ..harness.http_guard import (
    RequestGuard,
    allowed_host_headers,
    check_token,
    new_token,
    parse_allowed_hosts,
)
from ..harness.spec import DEFAULT_HARNESS, get_harness, model_tool_schemas
from ..harness.trajectory import Trajectory, write_jsonl
from ..harness.metrics import episode_report
from ..harness.turn import ToolCall, Turn
from ..runtime.error_modes import ERROR_MODES
from ..task import SCALES, Task
from ._tasks import resolve_task as _resolve_task

OPENENV_VERSION = "0.3.0"  # the openenv-core release this adapter is written and tested against
RESET_OPTIONS = ("task", "scale", "harness", "limits", "error_mode")
DEFAULT_PORT = 8766  # not vLLM's / the engine's 8000, not `progagent serve`'s 8765, not JupyterLab's 8888
TOKEN_ENV = "PROGAGENT_OPENENV_TOKEN"  # where clients find the server's token when none is passed


class ProgAgentEnvError(ValueError):
    """Bad input to the environment (a missing or unknown task, scale or seed, a step with no live episode).

    Over WebSocket the client receives the message as `RuntimeError("Server error: ...")`; over HTTP it is a
    409 answer whose `detail` is the message.
    """


# --- the pydantic types ------------------------------------------------------------------------------
class ToolCallModel(BaseModel):
    """One tool call of a turn (OpenAI's function call: `arguments` an object, or its JSON text)."""

    name: str = Field(description="the tool's name, as in the observation's tool_schemas")
    arguments: dict[str, Any] | str = Field(default_factory=dict, description="named arguments (or their JSON text)")
    id: str = Field(default="", description="the call's id; the tool message answering it carries the same id")

    @classmethod
    def from_call(cls, call: ToolCall) -> "ToolCallModel":
        return cls(name=call.name, arguments=call.arguments, id=call.id)

    def to_call(self) -> ToolCall:
        return ToolCall(self.name, _arguments(self.arguments), self.id)


class ProgAgentAction(Action):
    """One assistant turn. Also accepts OpenEnv's MCP actions: a payload whose `type` is `list_tools` or
    `call_tool` validates to `ListToolsAction` / `CallToolAction` (see `model_validate`)."""

    type: Literal["turn"] = Field(default="turn", description="action type discriminator")
    tool_calls: list[ToolCallModel] = Field(default_factory=list, description="the calls the model made, in order")
    text: str = Field(
        default="", description="visible text; a turn without calls ends the episode with it as the answer"
    )
    reasoning: str = Field(default="", description="thinking text, kept as reasoning_content")
    parse_errors: list[str] = Field(
        default_factory=list, description="tool-call blocks the trainer's parser could not read"
    )
    prompt_tokens: int | None = Field(default=None, ge=0, description="exact prompt size of this turn, if known")
    completion_tokens: int | None = Field(
        default=None, ge=0, description="exact completion size of this turn, if known"
    )
    cut: bool = Field(default=False, description="the turn hit its token budget before its end-of-turn token")

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Any:
        # OpenEnv's server validates every step payload with `action_cls.model_validate`, and routes the MCP
        # action types only when action_cls is the bare `Action`; this keeps both modes on one server.
        if cls is ProgAgentAction and isinstance(obj, dict) and obj.get("type") in _MCP_ACTIONS:
            return _MCP_ACTIONS[obj["type"]].model_validate(obj, *args, **kwargs)
        return super().model_validate(obj, *args, **kwargs)

    @classmethod
    def call(cls, name: str, **arguments: Any) -> "ProgAgentAction":
        """A turn with one call: `ProgAgentAction.call("claim_done", action="Done: 3 orders placed.")`."""
        return cls(tool_calls=[ToolCallModel(name=name, arguments=arguments)])

    @classmethod
    def from_turn(cls, turn: Turn) -> "ProgAgentAction":
        """A policy's turn as an action."""
        return cls(
            tool_calls=[ToolCallModel.from_call(c) for c in turn.tool_calls],
            text=turn.text,
            reasoning=turn.reasoning,
            parse_errors=list(turn.parse_errors),
            prompt_tokens=turn.prompt_tokens,
            completion_tokens=turn.completion_tokens,
            cut=turn.cut,
        )

    def to_turn(self) -> Turn:
        return Turn(
            text=self.text,
            tool_calls=[c.to_call() for c in self.tool_calls],
            cut=self.cut,
            parse_errors=list(self.parse_errors),
            reasoning=self.reasoning,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
        )


_MCP_ACTIONS: dict[str, type[Action]] = {"list_tools": ListToolsAction, "call_tool": CallToolAction}


class ProgAgentObservation(Observation):
    """What the client gets back from `reset` and from each turn (`done`, `reward` as in every OpenEnv observation)."""

    messages: list[dict] = Field(
        default_factory=list,
        description="messages added: at reset system + user; "
        "after a turn the assistant message as recorded, its tool messages, any feedback",
    )
    tool_schemas: list[dict] = Field(
        default_factory=list, description="at reset: the tools the model sees (OpenAI format)"
    )
    calls: list[dict] = Field(
        default_factory=list,
        description="per call of the turn: name, id, kind, is_error, "
        "runtime_error, timed_out, kernel_restarted, task_tool_calls",
    )
    episode_id: str = ""
    task_id: str = ""
    scale: str = ""
    seed: int | None = None
    harness: str = ""
    instruction: str = Field(default="", description="the instance's instruction (the first user message)")
    params: dict = Field(default_factory=dict, description="the instance's parameters (drawn from the seed)")
    end_reason: str = Field(
        default="", description="why the episode ended (harness.episode.END_REASONS), '' while live"
    )
    score: float | None = Field(default=None, description="the dense verifier score R~, once the episode has ended")
    criteria: list[dict] = Field(
        default_factory=list, description="the verifier's criteria, once the episode has ended"
    )
    final_answer: str | None = None
    metrics: dict = Field(
        default_factory=dict, description="the episode's counters so far (turns, tool calls, tokens, errors)"
    )


class ProgAgentState(State):
    """The session's episode: identity, progress and, once it ended, its verdict."""

    task_id: str = ""
    scale: str = ""
    seed: int | None = None
    harness: str = ""
    params: dict = Field(default_factory=dict)
    live: bool = Field(default=False, description="an episode is running (its kernel and state copy exist)")
    finished: bool = False
    end_reason: str = ""
    reward: float | None = None
    score: float | None = None
    metrics: dict = Field(default_factory=dict)


# --- the server's configuration -----------------------------------------------------------------------
@dataclass
class OpenEnvServerConfig:
    """How a server resolves resets: every field a reset leaves out comes from here."""

    tasks_dir: str | Path = "tasks"  # tasks are named by id (retail/restock_orders) below this folder only
    task: str | None = None  # default task id (None: every reset must name one)
    scale: str | None = "v0"  # default scale (None: every reset must name one)
    seed: int | None = None  # default seed (None: every reset must pass one; a GRPO group shares it)
    harness: str = DEFAULT_HARNESS  # default harness (harness.spec.HARNESSES)
    limits: dict = field(default_factory=dict)  # Limits overrides for every episode (e.g. {"max_turns": 40})
    error_mode: str = "is_error"  # how a failing tool shows inside programs
    session_kwargs: dict = field(default_factory=dict)  # to Session / PTCRuntime (program_timeout, unsafe_no_sandbox)
    max_concurrent_envs: int = 4  # WebSocket sessions at once (each its own episode and kernel)
    session_timeout: float | None = None  # seconds an idle session lives before OpenEnv closes it (None: forever)
    trajectories: str | Path | None = None  # JSON-lines file every finished episode's trajectory is appended to

    def __post_init__(self) -> None:
        get_harness(self.harness)  # raises ValueError naming the harnesses
        if self.scale is not None and self.scale not in SCALES:
            raise ValueError(f"scale must be one of {', '.join(SCALES)}, got {self.scale!r}")
        _check_limits(self.limits)
        if self.max_concurrent_envs < 1:
            raise ValueError("max_concurrent_envs must be at least 1")


_TRAJECTORIES_LOCK = threading.Lock()


def resolve_task(name: str, tasks_dir: str | Path) -> Task:
    """The task `name` (an id, or a path) below `tasks_dir`, loaded once; a folder outside it is refused."""
    return _resolve_task(name, tasks_dir, ProgAgentEnvError)


def _check_limits(limits: Any) -> dict:
    if not isinstance(limits, dict):
        raise ProgAgentEnvError(f"limits must be an object of Limits fields, got {type(limits).__name__}")
    unknown = sorted(set(limits) - {f.name for f in dataclasses.fields(Limits)})
    if unknown:
        raise ProgAgentEnvError(f"unknown limit(s) {unknown}; known: {[f.name for f in dataclasses.fields(Limits)]}")
    bad = [k for k, v in limits.items() if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1)]
    if bad:
        raise ProgAgentEnvError(f"limits {bad} must be positive integers (or null for no limit)")
    return limits


def _arguments(arguments: dict | str) -> Any:
    """A call's arguments as the session expects them: an object; JSON text is decoded when it holds one.
    Anything else goes on as it is, and the session answers the model that arguments must be an object."""
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments or "{}")
        except json.JSONDecodeError:
            return arguments
        return decoded
    return arguments


# --- the environment ----------------------------------------------------------------------------------
_LIVE_ENVIRONMENTS: "weakref.WeakSet[ProgAgentEnvironment]" = weakref.WeakSet()


class ProgAgentEnvironment(Environment[ProgAgentAction, ProgAgentObservation, ProgAgentState]):
    """An OpenEnv environment over one `Episode` at a time (one per WebSocket session)."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each episode has its own state copy and its own confined kernel

    def __init__(self, config: OpenEnvServerConfig | None = None):
        super().__init__()
        self.config = config or OpenEnvServerConfig()
        self.episode: Episode | None = None
        self.episode_id: str | None = None
        self.steps = 0
        self.last: Trajectory | None = None  # the last finished episode's trajectory
        _LIVE_ENVIRONMENTS.add(self)

    # --- reset ---------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> ProgAgentObservation:
        """Start an episode. `task`, `scale`, `harness`, `limits` and `error_mode` may be passed; the server's config
        fills what is left out. The previous episode, if still running, is closed first."""
        unknown = sorted(set(kwargs) - set(RESET_OPTIONS))
        if unknown:
            raise ProgAgentEnvError(
                f"unknown reset option(s) {unknown}; accepted: seed, episode_id, {', '.join(RESET_OPTIONS)}"
            )
        self._release()
        self.last, self.steps = None, 0
        config = self.config
        task_name = kwargs.get("task", config.task)
        scale = kwargs.get("scale", config.scale)
        seed = config.seed if seed is None else seed
        missing = [name for name, value in (("task", task_name), ("scale", scale), ("seed", seed)) if value is None]
        if missing:
            raise ProgAgentEnvError(
                f"reset needs {', '.join(missing)}: an episode is identified by (task, scale, seed); "
                "pass them to reset(...) or set them in the server's configuration"
            )
        if scale not in SCALES:
            raise ProgAgentEnvError(f"unknown scale {scale!r}; expected one of {', '.join(SCALES)}")
        if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
            raise ProgAgentEnvError(f"seed must be a non-negative integer, got {seed!r}")
        harness = kwargs.get("harness", config.harness)
        try:
            spec = get_harness(harness)
        except (ValueError, TypeError):
            raise ProgAgentEnvError(f"unknown harness {harness!r}; expected dtc, ptc or hybrid") from None
        error_mode = kwargs.get("error_mode", config.error_mode)  # a trainer's config names its own (train.env_hosts)
        if error_mode not in ERROR_MODES:
            raise ProgAgentEnvError(f"unknown error_mode {error_mode!r}; expected one of {', '.join(ERROR_MODES)}")
        assert task_name is not None  # refused above when missing
        task = resolve_task(task_name, config.tasks_dir)
        overrides = {**_check_limits(config.limits), **_check_limits(kwargs.get("limits") or {})}  # the reset's win
        limits = dataclasses.replace(Limits.for_task(task), **overrides)
        self.episode = Episode(
            task,
            scale,
            seed,
            spec,
            limits=limits,
            policy_name="openenv",
            error_mode=error_mode,
            session_kwargs=dict(config.session_kwargs),
        )
        self.episode_id = episode_id or str(uuid.uuid4())
        episode = self.episode
        return ProgAgentObservation(
            done=False,
            reward=None,
            messages=list(episode.messages),
            tool_schemas=list(episode.tools),
            episode_id=self.episode_id,
            task_id=task.id,
            scale=scale,
            seed=seed,
            harness=spec.name,
            instruction=episode.env.instruction,
            params=dict(episode.env.params),
            metrics=self._metrics(),
        )

    # --- step ----------------------------------------------------------------------------------------
    def step(self, action: Action, timeout_s: float | None = None, **kwargs: Any) -> Observation:
        """One turn (`ProgAgentAction`, or `CallToolAction` as a one-call turn), or the tool list (`ListToolsAction`).

        `timeout_s` (OpenEnv's HTTP field) is not used: a program's time limit is the runtime's
        (`program_timeout` in the server's `session_kwargs`)."""
        if isinstance(action, ListToolsAction):
            return ListToolsObservation(
                tools=[
                    Tool(
                        name=s["function"]["name"],
                        description=s["function"].get("description", ""),
                        input_schema=s["function"].get("parameters") or {"type": "object", "properties": {}},
                    )
                    for s in self._tool_schemas()
                ]
            )
        if isinstance(action, CallToolAction):
            turn = Turn(tool_calls=[ToolCall(action.tool_name, dict(action.arguments))])
        elif isinstance(action, ProgAgentAction):
            turn = action.to_turn()
        else:
            raise ProgAgentEnvError(
                f"unsupported action {type(action).__name__}: send a ProgAgentAction "
                "(one turn), a CallToolAction or a ListToolsAction"
            )
        episode = self._live_episode()
        messages_before, calls_before = len(episode.messages), len(episode.trajectory.calls)
        try:
            episode.add_turn(turn)
        except BaseException as exc:  # the machinery failed (dispatch never raises for model mistakes): end it
            episode.fail(f"{type(exc).__name__}: {exc}")
            self._finish()
            raise
        self.steps += 1
        added = episode.messages[messages_before:]
        calls = _call_summaries(episode.trajectory.calls[calls_before:], added)
        done = episode.finished
        trajectory = self._finish() if done else None
        if isinstance(action, CallToolAction):
            return _call_tool_observation(action.tool_name, added, calls, trajectory)
        return ProgAgentObservation(
            done=done,
            reward=trajectory.reward if trajectory else 0.0,
            messages=added,
            calls=calls,
            episode_id=self.episode_id or "",
            end_reason=trajectory.end_reason if trajectory else "",
            score=trajectory.score if trajectory else None,
            criteria=trajectory.criteria if trajectory else [],
            final_answer=trajectory.final_answer if trajectory else None,
            metrics=self._metrics(trajectory),
        )

    # --- state and the end ---------------------------------------------------------------------------
    @property
    def state(self) -> ProgAgentState:
        episode, last = self.episode, self.last
        trajectory = episode.trajectory if episode is not None else last
        if trajectory is None:
            return ProgAgentState(episode_id=self.episode_id, step_count=self.steps)
        return ProgAgentState(
            episode_id=self.episode_id,
            step_count=self.steps,
            task_id=trajectory.task_id,
            scale=trajectory.scale,
            seed=trajectory.seed,
            harness=trajectory.harness,
            params=dict(trajectory.params),
            live=episode is not None,
            finished=last is not None,
            end_reason=trajectory.end_reason,
            reward=last.reward if last is not None else None,
            score=last.score if last is not None else None,
            metrics=self._metrics(last),
        )

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(
            name="progagent",
            version=OPENENV_VERSION,
            description="ProgAgent workbench: verifiable multi-scale tool-use tasks under DTC, PTC or Hybrid "
            "harnesses (reset with task, scale, seed, harness; step with one assistant turn).",
        )

    def close(self) -> None:
        """Abandon a running episode (its kernel and state copy are released); idempotent."""
        self._release()

    def _live_episode(self) -> Episode:
        if self.episode is not None:
            return self.episode
        if self.last is not None:
            raise ProgAgentEnvError(
                f"the episode has ended ({self.last.end_reason}; reward {self.last.reward:g}); "
                "it takes no more turns: call reset() to start another"
            )
        raise ProgAgentEnvError(
            "no episode is running: call reset(task=..., scale=..., seed=...) first (over HTTP, "
            "OpenEnv makes a new environment per request, so play an episode over the WebSocket)"
        )

    def _tool_schemas(self) -> list[dict]:
        if self.episode is not None:
            return self.episode.tools
        if self.config.task is None:
            raise ProgAgentEnvError(
                "the tools depend on the task: call reset(task=...) first, or configure the server with a default task"
            )
        task = resolve_task(self.config.task, self.config.tasks_dir)
        return model_tool_schemas(self.config.harness, task.tool_schemas())

    def _finish(self) -> Trajectory:
        """Score the ended episode and release it (kernel, state copy); append its trajectory if configured."""
        episode, self.episode = self.episode, None
        assert episode is not None  # step finishes the episode it has just played
        trajectory = episode.to_trajectory()
        self.last = trajectory
        if self.config.trajectories:
            with _TRAJECTORIES_LOCK:
                write_jsonl(trajectory, self.config.trajectories)
        return trajectory

    def _release(self) -> None:
        episode, self.episode = self.episode, None
        if episode is not None:
            episode.close()

    def _metrics(self, trajectory: Trajectory | None = None) -> dict:
        episode = self.episode  # read once: `state` is read from the server's event loop while a step may end it
        t = trajectory or (episode.trajectory if episode is not None else None)
        if t is None:
            return {}
        metrics: dict[str, float | str | bool] = dict(episode_report(t))  # the report every adapter gives
        if trajectory is None:  # a live episode: its counters so far; no verdict yet
            assert episode is not None  # t is its trajectory
            del metrics["reward"], metrics["score"]
            metrics["context_tokens"] = episode.context_tokens
        else:
            metrics.update(end_reason=t.end_reason, seconds=round(t.seconds, 3), errored=t.errored)
        return metrics


def _call_summaries(records: list, added: list[dict]) -> list[dict]:
    """Per call of a turn, what the harness recorded; the id is that of the tool message that answered it
    (a block the parser could not read is answered by a user message, and has no id)."""
    tool_messages = iter(m for m in added if m.get("role") == "tool")
    summaries = []
    for record in records:
        message = next(tool_messages, {}) if record.kind != "malformed" else {}
        summaries.append(
            {
                "name": record.name,
                "id": message.get("tool_call_id", ""),
                "kind": record.kind,
                "is_error": record.is_error,
                "runtime_error": record.runtime_error,
                "timed_out": record.timed_out,
                "kernel_restarted": record.kernel_restarted,
                "task_tool_calls": record.task_tool_calls,
            }
        )
    return summaries


def _call_tool_observation(
    name: str, added: list[dict], calls: list[dict], trajectory: Trajectory | None
) -> CallToolObservation:
    """MCP tool mode: the tool message as a CallToolResult-shaped result (`data` is the text the model reads);
    on the call that ends the episode, the verdict as `structured_content` (as `progagent serve` answers it)."""
    done, reward = trajectory is not None, trajectory.reward if trajectory is not None else 0.0
    tool_messages = [m for m in added if m.get("role") == "tool"]
    if not tool_messages:
        return CallToolObservation(
            tool_name=name,
            done=done,
            reward=reward,
            error=MCPToolError(error_type=ToolErrorType.EXECUTION_ERROR, message="the call was not run"),
        )
    text = tool_messages[-1]["content"]
    structured = None
    if trajectory is not None:
        structured = {
            "reward": trajectory.reward,
            "score": trajectory.score,
            "criteria": trajectory.criteria,
            "end_reason": trajectory.end_reason,
            "final_answer": trajectory.final_answer,
        }
    result = {
        "content": [{"type": "text", "text": text}],
        "structured_content": structured,
        "data": text,
        "is_error": bool(calls and calls[0]["is_error"]),
    }
    return CallToolObservation(tool_name=name, result=result, done=done, reward=reward)


# --- the server ---------------------------------------------------------------------------------------
def make_app(
    config: OpenEnvServerConfig | None = None,
    *,
    token: str,
    host: str = "127.0.0.1",
    port: int | None = None,
    allowed_hosts: Sequence[str] = (),
    **overrides: Any,
):
    """OpenEnv's FastAPI app (`create_app`) serving `ProgAgentEnvironment`s built from `config`, behind the workbench's
    request guard (`harness.http_guard.RequestGuard`): every HTTP request and WebSocket handshake needs an allowed Host
    (`host` and, on loopback or 0.0.0.0, the loopback names, at `port` (None: any port); plus `allowed_hosts`), no
    foreign Origin, and `token` (`Authorization: Bearer <token>`, or on a WebSocket the subprotocol
    `progagent.bearer.<token>`). `new_token()` makes one; clients read it from $PROGAGENT_OPENENV_TOKEN."""
    from fastapi import Request, WebSocketDisconnect
    from fastapi.responses import JSONResponse

    config = dataclasses.replace(config, **overrides) if config else OpenEnvServerConfig(**overrides)
    if config.task is not None:
        resolve_task(config.task, config.tasks_dir)  # a misconfigured server fails now, not at the first reset
    app = create_app(
        functools.partial(ProgAgentEnvironment, config),
        ProgAgentAction,
        ProgAgentObservation,
        env_name="progagent",
        concurrency_config=ConcurrencyConfig(
            max_concurrent_envs=config.max_concurrent_envs, session_timeout=config.session_timeout
        ),
    )
    # OpenEnv has no authentication of its own: anyone who reached /ws could run programs in the sandboxes.
    # Starlette builds middleware at the first request: a bad token or host is checked here, now.
    hosts = allowed_host_headers(host, port, allowed_hosts)
    parse_allowed_hosts(hosts)
    check_token(token)
    app.add_middleware(RequestGuard, allowed_hosts=hosts, token=token, subprotocol_token=True)

    async def bad_input(request: Request, exc: ProgAgentEnvError) -> JSONResponse:
        return JSONResponse(status_code=409, content={"detail": str(exc)})

    async def closed_by_client(websocket: Any, exc: WebSocketDisconnect) -> None:
        # OpenEnv 0.3.0 closes the socket after the client already did (it catches only RuntimeError there),
        # which would log a traceback per session; the session's environment is closed before that point.
        return None

    app.add_exception_handler(ProgAgentEnvError, bad_input)
    app.add_exception_handler(WebSocketDisconnect, closed_by_client)

    def close_all() -> None:  # a server that stops leaves no kernel or episode folder behind
        for environment in list(_LIVE_ENVIRONMENTS):
            if environment.config is config:
                environment.close()

    app.router.on_shutdown.append(close_all)
    app.state.progagent_config = config
    return app


def serve(
    config: OpenEnvServerConfig | None = None,
    host: str = "127.0.0.1",
    port: int = DEFAULT_PORT,
    log_level: str = "warning",
    *,
    token: str | None = None,
    allowed_hosts: Sequence[str] = (),
    **overrides: Any,
) -> None:
    """Serve until interrupted (blocking). `token`: the bearer token clients must send; None makes a fresh one and
    prints it to stderr. Keep it on loopback unless the network is yours: plain HTTP carries the token in clear."""
    import sys

    import uvicorn

    if token is None:
        token = new_token()
        print(
            f"progagent openenv: ws://{host}:{port}/ws, token {token} (clients: {TOKEN_ENV}={token})",
            file=sys.stderr,
            flush=True,
        )
    app = make_app(config, token=token, host=host, port=port, allowed_hosts=allowed_hosts, **overrides)
    uvicorn.run(app, host=host, port=port, log_level=log_level)


# --- the client ---------------------------------------------------------------------------------------
def client_token(token: str | None = None) -> str:
    """The token a client sends: `token`, else $PROGAGENT_OPENENV_TOKEN; ValueError saying where to get it."""
    token = token if token is not None else os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise ValueError(
            f"the OpenEnv server needs its token: pass token=... or set ${TOKEN_ENV} (`progagent openenv "
            "serve` prints it when it starts, or reads it from --token-file)"
        )
    return check_token(token, "the OpenEnv token")


class BearerTokenClient:
    """Mixin for an OpenEnv `EnvClient`: its WebSocket handshake carries the server's token (`Authorization: Bearer`),
    from `token=` or $PROGAGENT_OPENENV_TOKEN. OpenEnv's own clients get it through `token_client(GenericEnvClient)`."""

    # the EnvClient attributes `connect` reads and sets (openenv-core 0.3.0 sets them in its __init__)
    _ws: ClientConnection | None
    _ws_url: str
    _connect_timeout: float
    _max_message_size: int

    def __init__(self, *args: Any, token: str | None = None, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self._progagent_token = client_token(token)

    async def connect(self) -> Any:
        """OpenEnv's `connect`, with the token; a refused handshake is a ConnectionError that says why.
        (openenv-core 0.3.0's own `connect` takes no headers, so this one replaces it, on the same attributes.)"""
        if self._ws is not None:
            return self
        loopback = (urlsplit(self._ws_url).hostname or "") in ("localhost", "127.0.0.1", "::1")
        try:
            self._ws = await ws_connect(
                self._ws_url,
                open_timeout=self._connect_timeout,
                max_size=self._max_message_size,
                additional_headers={"Authorization": f"Bearer {self._progagent_token}"},
                proxy=None if loopback else True,
            )  # as OpenEnv: no proxy for loopback
        except InvalidStatus as exc:
            reason = exc.response.body.decode("utf-8", "replace").strip()[:300] if exc.response.body else ""
            raise ConnectionError(
                f"{self._ws_url} refused the connection (HTTP {exc.response.status_code}): "
                f"{reason or 'no reason given'}"
            ) from None
        except Exception as exc:
            raise ConnectionError(f"Failed to connect to {self._ws_url}: {exc}") from exc
        return self


@functools.cache
def token_client(client_class: type) -> type:
    """`client_class` (an OpenEnv `EnvClient`: `GenericEnvClient`, `MCPToolClient`, ...) sending the server's token:
    `token_client(GenericEnvClient)(base_url=url, token=token)`."""
    return type(f"Token{client_class.__name__}", (BearerTokenClient, client_class), {})


class ProgAgentEnvClient(BearerTokenClient, EnvClient[ProgAgentAction, ProgAgentObservation, ProgAgentState]):
    """OpenEnv's `EnvClient` for this environment (async over WebSocket; `.sync()` for a blocking client). The
    server's token comes from `token=` or $PROGAGENT_OPENENV_TOKEN."""

    def _step_payload(self, action: Any) -> dict:
        if isinstance(action, dict):
            return action
        return action.model_dump(mode="json")

    def _parse_result(self, payload: dict) -> StepResult:
        data = dict(payload.get("observation") or {})
        done, reward = payload.get("done", False), payload.get("reward")
        if "tools" in data:
            observation: Observation = ListToolsObservation(
                tools=[Tool(**t) for t in data["tools"]], done=done, reward=reward
            )
        elif "tool_name" in data:
            observation = CallToolObservation(**data, done=done, reward=reward)
        else:
            observation = ProgAgentObservation(**data, done=done, reward=reward)
        return StepResult(observation=observation, reward=reward, done=done)

    def _parse_state(self, payload: dict) -> ProgAgentState:
        return ProgAgentState(**payload)


def play(env: Any, policy: Any, *, tasks_dir: str | Path = "tasks", **reset: Any) -> StepResult:
    """Drive a remote episode with one of the workbench's policies, client side; returns the last StepResult.

    `env` is a synchronous OpenEnv client of this server (`ProgAgentEnvClient(...).sync()`), `reset` the reset
    options (task, scale, seed, harness, limits). The policy sees what a model would: the messages and tools the
    server sent, never the environment. A policy with `start_episode` (the oracle teacher) also gets the task,
    loaded from the client's own `tasks_dir`, and the instance's parameters from the reset observation.
    """
    result = env.reset(**reset)
    observation = result.observation
    messages, tools = list(observation.messages), list(observation.tool_schemas)
    agent = policy
    if hasattr(policy, "start_episode"):
        agent = start_agent(policy, resolve_task(observation.task_id, tasks_dir), observation.params)
    try:
        while not result.done:
            turn = agent.act(messages, tools)
            result = env.step(ProgAgentAction.from_turn(turn))
            messages += result.observation.messages
        return result
    finally:
        if agent is not policy and hasattr(agent, "close"):
            agent.close()


__all__ = [
    "DEFAULT_PORT",
    "OPENENV_VERSION",
    "TOKEN_ENV",
    "BearerTokenClient",
    "OpenEnvServerConfig",
    "ProgAgentAction",
    "ProgAgentEnvClient",
    "ProgAgentEnvError",
    "ProgAgentEnvironment",
    "ProgAgentObservation",
    "ProgAgentState",
    "ToolCallModel",
    "client_token",
    "make_app",
    "new_token",
    "play",
    "resolve_task",
    "serve",
    "token_client",
]
