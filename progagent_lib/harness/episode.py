"""The episode: one task, one harness, stepped one assistant turn at a time, until it ends.

`Episode` is the single place where an episode's rules live: the messages, the budgets (`Limits`),
the end reasons, how observations are cut, the feedback for unreadable calls and spent budgets, and
every metric a trajectory records. Everything that runs an episode steps it:

- `run_episode` (message level: `progagent run`, the notebooks) is a short loop: ask the policy for a
  turn, `episode.add_turn(turn)`, until `episode.finished`;
- the training rollout and the evaluation after training (`progagent_lib.train.rollout`) are a token
  adapter over the same object: they decode the generated tokens, hand the turn to the episode, and
  render the messages it adds with the tokenizer's own chat template;
- the MCP server (`harness.mcp_server`, `progagent serve`) hands each tool call of its client to the
  episode as one turn; the client's own text never reaches the server.

Why an episode ends, and which endings count as errored or truncated, is `end_reasons.py`.

The loop is the same for DTC, PTC and Hybrid; what differs (the tools offered, the system prompt,
whether task tools are direct calls) is data in `spec.py`, applied by `Session`.
"""

from __future__ import annotations

import inspect
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Protocol

from ..errors import ContextFull, PolicyError
from ..textsafe import clean_text
from .end_reasons import END_REASONS, INFRASTRUCTURE_END_REASONS, TRUNCATION_END_REASONS
from .metrics import TokenCounter, analyze_program
from .session import Observation, Session
from .spec import DEFAULT_HARNESS, PROGRAMMATIC_TOOL_CALL, HarnessSpec, get_harness
from .trajectory import CallRecord, Trajectory
from .turn import ToolCall, Turn

if TYPE_CHECKING:
    from ..task import Environment


class EpisodeTask(Protocol):
    """What an episode asks of a task: one of ours (`task.Task`) or an external suite's (`benchmarks.ExternalTask`)."""

    @property
    def id(self) -> str: ...

    @property
    def limits(self) -> dict | None: ...

    def instantiate(self, scale: str = "v0", seed: int = 0) -> "Environment": ...


@dataclass(frozen=True)
class Limits:
    """When an episode is cut off. None means no limit. The same budgets for evaluation and training."""

    max_tool_calls: int | None = 100  # tool calls the model issues (a program counts once), as in the paper
    max_turns: int | None = 200  # assistant turns
    max_context_tokens: int | None = 131_072  # prompt + everything generated and observed so far
    max_new_tokens: int | None = None  # one assistant turn (a generator's budget; a longer turn is cut)
    max_observation_chars: int | None = None  # one observation, cut with a visible marker

    @classmethod
    def for_task(cls, task: EpisodeTask) -> "Limits":
        """Defaults, overridden by the task's `[limits]` table in task.toml."""
        known = {k: v for k, v in (task.limits or {}).items() if k in cls.__dataclass_fields__}
        return cls(**known)

    def with_overrides(self, **overrides: Any) -> "Limits":
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


def parse_error_feedback(problem: str) -> str:
    """What the model reads after a tool-call block that could not be parsed (the problem may quote the block)."""
    return clean_text(
        f"Error: your tool call could not be read: {problem} No tool was run; "
        "write the call again in the expected format."
    )


def tool_budget_message(max_tool_calls: int) -> str:
    """What the model reads for a call made after the episode's tool-call budget ran out."""
    return f"Not run: the limit of {max_tool_calls} tool calls was reached."


def cut_observation(text: str, limit: int | None) -> str:
    """An observation bounded to `limit` characters, with a visible marker so the model knows text is missing."""
    if limit is None or len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit} more characters cut]"


class Episode:
    """One episode, advanced by `add_turn(turn)`; `to_trajectory()` scores it and releases the environment.

    A turn is a `Turn` (harness.turn), whoever produced it. Use as a context manager, or call `to_trajectory()`
    (which closes) or `close()`.

    `env_host`: where the environment and its tools live. None: here (`task.instantiate` and a `Session`); else an
    object whose `open(task, scale, seed, spec, error_mode=, session_kwargs=)` returns an environment (`instruction`,
    `params`, `verify(answer)`, `close()`) and a Session-like object (`dispatch`, `tool_schemas`, `system_prompt`,
    `done`, `result`, `final_answer`, `user_message`, `close`): a bounded local one or an environment server
    (`progagent_lib.train.env_hosts`). This episode keeps its rules and metrics either way.

    Its counters, one definition each for every path, are `metrics.EPISODE_METRICS`.
    """

    def __init__(
        self,
        task: EpisodeTask,
        scale: str = "v0",
        seed: int = 0,
        harness: str | HarnessSpec = DEFAULT_HARNESS,
        *,
        limits: Limits | None = None,
        policy_name: str = "",
        sample: int = 0,
        error_mode: str = "is_error",
        system_prompt: str | Path | None = None,
        session_kwargs: dict | None = None,
        tokenizer: Any = None,
        env_host: Any = None,
    ):
        self.task = task
        self.spec = get_harness(harness) if isinstance(harness, str) else harness
        self.limits = limits or Limits.for_task(task)
        self.count = TokenCounter(tokenizer)
        self.trajectory = Trajectory(
            task_id=task.id,
            scale=scale,
            seed=seed,
            harness=self.spec.name,
            policy=policy_name,
            sample=sample,
            token_counter=self.count.name,
        )
        self._started = time.perf_counter()
        if env_host is not None:  # the environment lives elsewhere (e.g. an OpenEnv server: train.env_hosts)
            self.env, self.session = env_host.open(
                task, scale, seed, self.spec, error_mode=error_mode, session_kwargs=session_kwargs
            )
        else:
            self.env = task.instantiate(scale, seed)
            try:
                self.session = Session(self.env, self.spec, error_mode=error_mode, **(session_kwargs or {}))
            except BaseException:
                self.env.close()
                raise
        self.tools = self.session.tool_schemas()
        self.messages: list[dict] = [
            {"role": "system", "content": self.session.system_prompt(system_prompt)},
            {"role": "user", "content": self.env.instruction},
        ]
        self.trajectory.tools, self.trajectory.messages = self.tools, self.messages
        self.trajectory.instruction, self.trajectory.params = self.env.instruction, dict(self.env.params)
        self.context_tokens = (
            self.count(self.messages[0]["content"])
            + self.count(self.env.instruction)
            + self.count(json.dumps(self.tools))
        )
        self.final_response = ""
        self.last_observations: list[Observation] = []  # the Observations of the last turn's calls, structured
        self._used_ids: set[str] = set()
        self._closed = False
        self._check_budgets()

    # --- state -------------------------------------------------------------------------------------
    @property
    def finished(self) -> bool:
        return bool(self.trajectory.end_reason)

    @property
    def end_reason(self) -> str:
        return self.trajectory.end_reason

    def _end(self, reason: str) -> None:
        assert reason in END_REASONS, reason
        if not self.trajectory.end_reason:
            self.trajectory.end_reason = reason

    def _check_budgets(self) -> None:
        limits, t = self.limits, self.trajectory
        if self.session.done:
            self._end("claim_done")
        elif limits.max_tool_calls is not None and t.model_tool_calls >= limits.max_tool_calls:
            self._end("max_tool_calls")
        elif limits.max_turns is not None and t.turns >= limits.max_turns:
            self._end("max_turns")
        elif limits.max_context_tokens is not None and self.context_tokens >= limits.max_context_tokens:
            self._end("max_context_tokens")

    def report_context_tokens(self, tokens: int) -> None:
        """The exact context size, from whoever renders the context (a token adapter, a server's usage report)."""
        self.context_tokens = int(tokens)
        if not self.finished:
            self._check_budgets()

    # --- one turn ----------------------------------------------------------------------------------
    def add_turn(self, turn: Turn) -> list[dict]:
        """Record one assistant turn, run its tool calls, and return the messages added after it.

        The returned messages are the tool messages (one per call, in order), then one user message per
        block that could not be parsed. claim_done ends the episode at once: later calls in its turn are not run.
        Where the environment scripts more user turns (`env.next_user_message(reply)`), a turn without tool calls or
        with claim_done ends the model's turn instead, and the user's next message is the last message returned.
        A cut turn (`turn.cut`: it ran out of tokens before its end) is recorded as text; nothing is run, and the
        episode ends as `turn_cut`.
        """
        if self.finished:
            raise RuntimeError(f"the episode has ended ({self.end_reason}); it takes no more turns")
        t = self.trajectory
        turn_index = t.turns
        t.turns += 1
        calls = [] if turn.cut else self._with_unique_ids(turn.tool_calls, turn_index)
        recorded = replace(turn, tool_calls=calls)
        self.messages.append(recorded.to_message())
        self._count_turn(recorded)
        if turn.cut:
            self._end("turn_cut")
            return []
        if not calls and not turn.parse_errors:
            self.final_response = turn.text
            next_user_message = getattr(self.env, "next_user_message", None)
            follow_up = next_user_message(self.final_response) if next_user_message is not None else None
            if follow_up is None:
                self._end("no_tool_call")
                return []
            user_message = self._add_user_message(follow_up)
            self._check_budgets()
            return [user_message]

        added: list[dict] = []
        self.last_observations = []
        for call in calls:
            if self.session.done:
                break
            if self.session.user_message is not None:  # claim_done ended the user turn; the conversation goes on
                content = "Not run: claim_done ended your turn before this call."
                added.append(_tool_message(call, content))  # every call of a kept turn gets its answer
                self._record(self._unrun(turn_index, call, content, "invalid"))
                continue
            if self.limits.max_tool_calls is not None and t.model_tool_calls >= self.limits.max_tool_calls:
                content = tool_budget_message(self.limits.max_tool_calls)
                added.append(_tool_message(call, content))
                self._record(self._unrun(turn_index, call, content, "over_budget"))
                continue
            observation = self.session.dispatch(call)
            self.last_observations.append(observation)
            content = cut_observation(observation.content, self.limits.max_observation_chars)
            added.append(_tool_message(call, content))
            t.model_tool_calls += 1
            self._record(_call_record(turn_index, call, observation, content, self.count(content)))
        # A block the parser could not read is answered like a failed call, and the episode goes on.
        # The answer comes after the tool messages: APIs want those right after the assistant turn.
        if not self.session.done:
            for problem in turn.parse_errors:
                feedback = parse_error_feedback(problem)
                added.append({"role": "user", "content": feedback})
                t.malformed_calls += 1
                self._record(self._unrun(turn_index, ToolCall("<malformed>", {}), feedback, "malformed"))
        self.messages.extend(added)
        if self.session.user_message is not None:  # claim_done ended a user turn of a scripted conversation
            follow_up, self.session.user_message = self.session.user_message, None
            added.append(self._add_user_message(follow_up))
        self._check_budgets()
        return added

    def _add_user_message(self, text: str) -> dict:
        """The scripted user's next message (a suite with several user turns, e.g. BFCL multi-turn: the environment's
        `next_user_message(reply)` gives it when the model ends its turn, by a plain answer or claim_done). The
        episode goes on; the tools are read again, since a suite may offer a tool from a later turn on."""
        message = {"role": "user", "content": clean_text(text)}
        self.messages.append(message)
        self.tools = self.session.tool_schemas()
        self.trajectory.tools = self.tools
        self.context_tokens += self.count(message["content"])
        return message

    def _count_turn(self, turn: Turn) -> None:
        """The context grows by the turn: the exact size when the generator reported its usage, else an estimate."""
        reported = turn.reported_context_tokens
        if reported:  # the policy knows the exact size (its own tokenizer, a server's usage report)
            self.context_tokens = reported
        else:
            self.context_tokens += (
                self.count(turn.text)
                + self.count(turn.reasoning)
                + sum(self.count(json.dumps(c.arguments, ensure_ascii=False)) for c in turn.tool_calls)
            )

    def client_left(self) -> None:
        """The driver left before the episode ended (an MCP client closed, its server was stopped): the episode
        ends as `client_closed`, and `to_trajectory()` judges the state as left, as after a plain answer."""
        self._end("client_closed")

    def end_context_full(self) -> None:
        """The next turn's context does not fit the model (`ContextFull`): ended as the context budget ends it."""
        self._end("max_context_tokens")

    def fail(self, error: str) -> None:
        """The policy could not produce a turn: the episode ends as an infrastructure error."""
        self.trajectory.error = str(error)
        self._end("policy_error")

    # --- the end -----------------------------------------------------------------------------------
    def to_trajectory(self) -> Trajectory:
        """Score the episode (without claim_done the verifier judges the state as left, with the last plain
        answer or an empty one) and release the environment. Idempotent."""
        t = self.trajectory
        if not self._closed:
            try:
                if not self.finished:
                    raise RuntimeError("to_trajectory() before the episode ended; call close() to abandon it")
                done = self.session.done
                verdict = self.session.result if done else self.env.verify(self.final_response)
                t.final_answer = self.session.final_answer if done else (self.final_response or None)
                t.reward, t.score = float(verdict.reward), float(verdict.score)
                t.criteria = verdict.to_dict()["criteria"]
                t.context_tokens = self.context_tokens
            finally:
                self.close()
        return t

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self.session.close()
        finally:
            self.env.close()
            self.trajectory.seconds = time.perf_counter() - self._started

    def __enter__(self) -> "Episode":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # --- helpers -----------------------------------------------------------------------------------
    def _with_unique_ids(self, calls: list[ToolCall], turn_index: int) -> list[ToolCall]:
        """Every call needs an id that its tool message answers; ids from the parser repeat across turns."""
        unique = []
        for i, call in enumerate(calls):
            call_id = call.id if call.id and call.id not in self._used_ids else f"call_{turn_index}_{i}"
            self._used_ids.add(call_id)
            unique.append(ToolCall(call.name, call.arguments, call_id))
        return unique

    def _unrun(self, turn_index: int, call: ToolCall, answer: str, kind: str) -> CallRecord:
        """The record of a call that was answered without being run (`kind` says why)."""
        return CallRecord(
            call.name,
            call.arguments,
            call.id,
            turn=turn_index,
            observation=answer,
            observation_tokens=self.count(answer),
            seconds=0.0,
            is_error=True,
            kind=kind,
        )

    def _record(self, record: CallRecord) -> None:
        t = self.trajectory
        t.calls.append(record)
        t.tool_output_tokens += record.observation_tokens
        t.tool_calls += record.task_tool_calls
        t.runtime_errors += record.runtime_error
        t.timeouts += record.timed_out
        self.context_tokens += record.observation_tokens


def run_episode(
    task: EpisodeTask,
    scale: str = "v0",
    seed: int = 0,
    harness: str | HarnessSpec = DEFAULT_HARNESS,
    policy: Any = None,
    limits: Limits | None = None,
    *,
    sample: int = 0,
    error_mode: str = "is_error",
    system_prompt: str | Path | None = None,
    session_kwargs: dict | None = None,
    tokenizer: Any = None,
    on_turn: Callable[[Episode], None] | None = None,
) -> Trajectory:
    """Run one episode and return its trajectory.

    `policy` answers `act(messages, tools) -> Turn`; it may offer `start_episode(task, params)` returning
    a per-episode policy (the oracle teacher does; `params` are the instance's parameters), `tokenizer` (to count tokens exactly) and
    `default_limits`. `limits` defaults to the policy's `default_limits`, else the task's limits.
    `system_prompt` is a file whose text replaces the harness's prompt; `session_kwargs` go to
    `Session` (and on to `PTCRuntime`: timeout, pool, mcp_servers; the bound is the harness's). `tokenizer` counts
    tokens instead of the policy's (e.g. to measure the teacher's context cost in a model's tokens). `on_turn(episode)`
    is called after each turn (a progress bar's turn counter: a small model's episode takes minutes).
    """
    if policy is None:
        raise ValueError("run_episode needs a policy, e.g. OracleTeacher(harness) or make_policy('oracle', harness)")
    limits = limits or getattr(policy, "default_limits", None) or Limits.for_task(task)
    episode = Episode(
        task,
        scale,
        seed,
        harness,
        limits=limits,
        policy_name=getattr(policy, "name", type(policy).__name__),
        sample=sample,
        error_mode=error_mode,
        system_prompt=system_prompt,
        session_kwargs=session_kwargs,
        tokenizer=tokenizer if tokenizer is not None else getattr(policy, "tokenizer", None),
    )
    agent = None
    try:
        agent = start_agent(policy, task, episode.env.params, (scale, seed))
        while not episode.finished:
            try:
                turn = agent.act(episode.messages, episode.tools)
            except ContextFull:  # the model's positions are a context budget too: truncated, not errored
                episode.end_context_full()
                break
            except PolicyError as exc:
                episode.fail(str(exc))
                break
            episode.add_turn(turn)
            if hasattr(agent, "observe") and not turn.cut:  # a player that wants the structured results (the teacher)
                agent.observe(episode.last_observations)
            if on_turn is not None:
                on_turn(episode)
        return episode.to_trajectory()
    finally:
        if agent is not None and agent is not policy and hasattr(agent, "close"):  # a per-episode player
            agent.close()
        episode.close()


def start_agent(policy: Any, task: EpisodeTask, params: dict, instance: tuple[str, int] | None = None) -> Any:
    """The per-episode player of `policy`: `start_episode(task, params, instance)` for a policy that takes the
    instance's (scale, seed) (the oracle teacher, which plans its reading on a private copy of it),
    `start_episode(task, params)`, or `start_episode(task)` for a policy written before tasks had instance parameters
    (it reads the instruction from the messages), or the policy itself."""
    if not hasattr(policy, "start_episode"):
        return policy
    try:
        arity = len(inspect.signature(policy.start_episode).parameters)
    except (TypeError, ValueError):
        arity = 2
    if arity >= 3:
        return policy.start_episode(task, params, instance)
    return policy.start_episode(task, params) if arity >= 2 else policy.start_episode(task)


def _tool_message(call: ToolCall, content: str) -> dict:
    return {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content}


def _call_record(turn_index: int, call: ToolCall, observation: Observation, content: str, tokens: int) -> CallRecord:
    program = None
    if observation.kind == "program":
        program = analyze_program(call.arguments.get("code", ""))
    return CallRecord(
        call.name,
        call.arguments,
        call.id,
        turn=turn_index,
        observation=content,
        observation_tokens=tokens,
        seconds=observation.seconds,
        is_error=observation.is_error,
        kind=observation.kind,
        task_tool_calls=len(observation.task_tool_calls),
        runtime_error=observation.runtime_error,
        timed_out=observation.timed_out,
        kernel_restarted=observation.kernel_restarted,
        program=program,
    )


__all__ = [
    "END_REASONS",
    "INFRASTRUCTURE_END_REASONS",
    "TRUNCATION_END_REASONS",
    "Episode",
    "Limits",
    "cut_observation",
    "run_episode",
    "PROGRAMMATIC_TOOL_CALL",
]
