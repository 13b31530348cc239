"""Episodes whose environment lives on OpenEnv servers (`progagent openenv serve`), e.g. on CPU nodes.

The model generates here; the server runs the tools, the programs (its confined kernels) and the verifier. The
episode itself stays here: `Episode` keeps its rules, budgets, observation cuts, end reasons and metrics, and only
its environment and Session come from a server. `EnvServers` is the `env_host` that `Episode` (and so the GSPO
rollout and evaluation, through `run_token_episodes`) opens them with:

- `open(task, scale, seed, spec, error_mode=...)` picks the next server round-robin (a full one is skipped), and
  resets a remote episode of (task, scale, seed) under the harness and error mode, with no budget of its own (the
  local episode's budgets decide when it ends). The instance served must be the local one: the same instruction and
  tool schemas, else the server runs another checkout of the task and is refused.
- `RemoteSession.dispatch(call)` sends one call as a one-call turn and maps the server's answer (its tool message
  and its call record) to the `Observation` a local `Session` gives; claim_done's verdict comes with it.
- `RemoteEnvironment.verify(answer)` ends a remote episode that ended here without claim_done (a plain answer, a
  budget, a cut turn): a plain-answer turn, judged by the server's verifier as a local one would be.

Everything a server sends is checked before use (one tool message per call, known kinds, readable criteria, the
verdict's reward equal to its criteria's); each message is bounded in size and time. A server that fails or answers
out of protocol raises `RemoteEnvError`, naming the server: the rollout ends that episode as an infrastructure
error, as it does a local episode whose machinery raised.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from websockets.exceptions import ConnectionClosed

from ..harness.episode import Limits
from ..harness.session import Observation, ToolCall
from ..harness.spec import HarnessSpec, model_tool_schemas
from ..runtime.bridge import MAX_CALL_RECORDS
from ..task.verifier import Criterion, VerifyResult
from ..textsafe import clean_text
from .openenv import (
    ProgAgentAction,
    ProgAgentEnvClient,
    ProgAgentObservation,
    ToolCallModel,
    client_token,
)

CONNECT_TIMEOUT_S = 10.0
STEP_TIMEOUT_S = 900.0  # one call: a program under the server's own time limit, a terminal command, or the verifier
CAPACITY_WAIT_S = 10.0  # every server full: try again this long (slots free a moment after sockets close)
MAX_MESSAGE_MIB = 16.0  # one answer: the added messages of one call (the runtime bounds a program's output)
NO_LIMITS = {f.name: None for f in dataclasses.fields(Limits)}  # the local episode keeps the budgets
CALL_KINDS = ("task_tool", "program", "terminal", "claim_done", "invalid")
FLAGS = ("is_error", "runtime_error", "timed_out", "kernel_restarted")


class RemoteEnvError(RuntimeError):
    """An environment server failed, refused, or answered out of protocol (the message names it and the fix)."""


def check_server_url(url: Any) -> str:
    """`url` if it is a server's base URL (http(s)://host:port, no path, query or credentials), else ValueError."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if (
        parts is None
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.username
        or parts.password
        or parts.path not in ("", "/")
        or parts.query
        or parts.fragment
    ):
        raise ValueError(
            f"{url!r} is not an environment server's base URL: write http://HOST:PORT (the address "
            "`progagent openenv serve` prints, without /ws; the token goes in a token file, not the URL)"
        )
    return url.rstrip("/")


class EnvServers:
    """Episodes on one or more OpenEnv servers, handed out round-robin (`env_host` of `Episode`).

    `token`: the servers' bearer token (one for all), else $PROGAGENT_OPENENV_TOKEN. `start`: the first server's
    index (a rank's number, so that ranks do not all begin on the first server). `capacity_wait_s`: how long an
    episode waits for a slot when every server is full. `opened` counts episodes per URL."""

    most_at_once = None  # no kernel lives here; a server's capacity is its own --max-concurrent-envs

    def __init__(
        self, urls: Sequence[str], token: str | None = None, *, start: int = 0, capacity_wait_s: float = CAPACITY_WAIT_S
    ):
        if not urls:
            raise ValueError("EnvServers needs at least one server URL")
        self.urls = [check_server_url(url) for url in urls]
        self.capacity_wait_s = capacity_wait_s
        self.token = client_token(token)
        self._turn = itertools.count(start)
        self.opened: Counter[str] = Counter()

    def check(self) -> None:
        """Each server answers its health check with this token: before any compute, a clear error if not."""
        for url in self.urls:
            request = urllib.request.Request(f"{url}/health", headers={"Authorization": f"Bearer {self.token}"})
            try:
                with urllib.request.urlopen(request, timeout=CONNECT_TIMEOUT_S) as answer:
                    answer.read(4096)
            except urllib.error.HTTPError as exc:
                reason = exc.read(300).decode("utf-8", "replace").strip()
                raise RemoteEnvError(
                    f"the environment server {url} refused this trainer (HTTP {exc.code}: {reason}); "
                    "check env_server_token_file holds the token the server was started with "
                    "(--token-file) and that the server allows this host name (--allow-host)"
                ) from None
            except (OSError, ValueError) as exc:
                raise RemoteEnvError(
                    f"the environment server {url} cannot be reached ({exc}); start it there with "
                    "`progagent openenv serve --host ... --port ... --token-file ...`"
                ) from None

    def open(
        self,
        task: Any,
        scale: str,
        seed: int,
        spec: HarnessSpec,
        *,
        error_mode: str = "is_error",
        session_kwargs: dict | None = None,
    ) -> tuple[RemoteEnvironment, RemoteSession]:
        if session_kwargs:
            raise ValueError(
                f"session_kwargs {sorted(session_kwargs)} configure kernels here; an environment server "
                "sets its own (`progagent openenv serve --timeout ...`)"
            )
        connection = self._connect(task, scale, seed, spec, error_mode)
        try:
            _check_same_instance(connection.url, task, seed, spec, connection.first)
            return (RemoteEnvironment(connection, connection.first), RemoteSession(connection, spec, connection.first))
        except BaseException:
            connection.close()
            raise

    def _connect(self, task: Any, scale: str, seed: int, spec: HarnessSpec, error_mode: str) -> _Connection:
        """A remote episode on the next server in turn; a full or unreachable one is skipped. When none can take it,
        they are tried again for `capacity_wait_s` (a server frees a closed session's slot a moment after the socket
        closes), then RemoteEnvError says why each refused."""
        first = next(self._turn)
        deadline = time.monotonic() + self.capacity_wait_s
        while True:
            refusals = {}
            for i in range(len(self.urls)):
                url = self.urls[(first + i) % len(self.urls)]
                try:
                    connection = _Connection.reset(url, self.token, task, scale, seed, spec, error_mode)
                except _Unavailable as exc:
                    refusals[url] = str(exc)
                    continue
                self.opened[url] += 1
                return connection
            if time.monotonic() >= deadline:
                reasons = "; ".join(f"{url}: {why}" for url, why in refusals.items())
                raise RemoteEnvError(
                    f"no environment server can take the episode ({reasons}). A full server needs a "
                    "larger --max-concurrent-envs (at least the episodes of a batch x ranks / servers), "
                    "or more servers; an unreachable one, to be started again"
                )
            time.sleep(0.25)


class _Unavailable(Exception):
    """A server that cannot take an episode now: at capacity, or not reachable (the next one is tried)."""


class _EpisodeClient(ProgAgentEnvClient):
    """Our OpenEnv client, which also reads why a server closed a session at once: OpenEnv sends the reason (e.g.
    CAPACITY_REACHED) and closes before the client's first message, whose send then fails without it."""

    async def _send_and_receive(self, message: dict) -> dict:
        try:
            return await super()._send_and_receive(message)
        except ConnectionClosed:
            reason = await self._reason_for_closing()
            if reason is None:
                raise
            raise RuntimeError(
                f"Server error: {reason.get('message', 'no reason given')} (code: {reason.get('code', 'UNKNOWN')})"
            ) from None

    async def _reason_for_closing(self) -> dict | None:
        if self._ws is None:  # never connected: nothing to read
            return None
        try:
            last = json.loads(await asyncio.wait_for(self._ws.recv(), timeout=1.0))
        except Exception:  # noqa: BLE001 - nothing buffered or unreadable: no reason to report
            return None
        data = last.get("data") if isinstance(last, dict) and last.get("type") == "error" else None
        return {k: str(v)[:300] for k, v in data.items()} if isinstance(data, dict) else None


class _Connection:
    """One remote episode: a synchronous OpenEnv client, its answers checked."""

    def __init__(self, url: str, client: Any, first: ProgAgentObservation):
        self.url, self.client, self.first = url, client, first
        self.closed = False

    @classmethod
    def reset(
        cls, url: str, token: str, task: Any, scale: str, seed: int, spec: HarnessSpec, error_mode: str
    ) -> _Connection:
        """A live remote episode; _Unavailable when the server is at capacity or cannot be reached."""
        client = _EpisodeClient(
            base_url=url,
            token=token,
            connect_timeout_s=CONNECT_TIMEOUT_S,
            message_timeout_s=STEP_TIMEOUT_S,
            max_message_size_mb=MAX_MESSAGE_MIB,
        ).sync()
        try:
            result = client.reset(
                task=task.id, scale=scale, seed=seed, harness=spec.name, limits=NO_LIMITS, error_mode=error_mode
            )
        except Exception as exc:  # noqa: BLE001 - a network or server failure, reported with the server's name
            _close_quietly(client)
            if "CAPACITY_REACHED" in str(exc):
                raise _Unavailable("full") from None
            if isinstance(exc, ConnectionError):  # no session was opened: nothing of the episode ran there
                raise _Unavailable(f"unreachable ({str(exc)[:200]})") from None
            raise RemoteEnvError(
                f"the environment server {url} could not start {task.id} ({scale}, seed {seed}): {_describe(exc)}"
            ) from None
        except BaseException:
            _close_quietly(client)
            raise
        if not isinstance(result.observation, ProgAgentObservation):
            _close_quietly(client)
            raise RemoteEnvError(
                f"the environment server {url} answered a reset with "
                f"{type(result.observation).__name__}, not an episode's first observation"
            )
        return cls(url, client, result.observation)

    def step(self, action: ProgAgentAction, doing: str) -> ProgAgentObservation:
        if self.closed:
            raise RemoteEnvError(f"the remote episode on {self.url} is closed; it takes no more turns")
        try:
            result = self.client.step(action)
        except Exception as exc:  # noqa: BLE001 - as in reset
            raise RemoteEnvError(f"the environment server {self.url} failed while {doing}: {_describe(exc)}") from None
        if not isinstance(result.observation, ProgAgentObservation):
            raise RemoteEnvError(
                f"the environment server {self.url} answered {doing} with {type(result.observation).__name__}"
            )
        return result.observation

    def verdict(self, observation: ProgAgentObservation) -> VerifyResult:
        """The server's verdict on an ended episode, rebuilt from its criteria (and checked against its reward)."""
        criteria = []
        for item in observation.criteria:
            try:
                weight = item["weight"]
                if isinstance(weight, bool) or not isinstance(weight, (int, float)):
                    raise TypeError("the weight is not a number")
                criteria.append(
                    Criterion(
                        name=_text(item["name"]),
                        passed=_flag(item["passed"]),
                        weight=weight,
                        detail=_text(item.get("detail", "")),
                    )
                )
            except (KeyError, TypeError, ValueError) as exc:
                raise RemoteEnvError(
                    f"the environment server {self.url} sent an unreadable criterion {str(item)[:200]}: {exc}"
                ) from None
        result = VerifyResult(criteria)
        if observation.reward != result.reward:
            raise RemoteEnvError(
                f"the environment server {self.url} reported reward {observation.reward} for "
                f"criteria that give {result.reward}"
            )
        return result

    def close(self) -> None:
        """Leave the remote episode: the server releases its kernel and state copy when the socket closes."""
        if not self.closed:
            self.closed = True
            _close_quietly(self.client)


class RemoteEnvironment:
    """What an episode reads of its environment, served remotely: the instance, and the verdict on a plain answer."""

    def __init__(self, connection: _Connection, first: ProgAgentObservation):
        self._connection = connection
        self.instruction = first.instruction
        self.params = dict(first.params)

    def verify(self, answer: str) -> VerifyResult:
        """The server's verdict on `answer` with the state as left: a plain-answer turn, which ends the remote episode."""
        observation = self._connection.step(ProgAgentAction(text=answer), "judging the final answer")
        if not observation.done:
            raise RemoteEnvError(
                f"the environment server {self._connection.url} did not end the episode on a plain answer"
            )
        return self._connection.verdict(observation)

    def close(self) -> None:
        self._connection.close()


class RemoteSession:
    """A `Session` whose calls run on an OpenEnv server: one call per step, answered as a local Session answers."""

    def __init__(self, connection: _Connection, spec: HarnessSpec, first: ProgAgentObservation):
        self._connection = connection
        self.harness = spec
        self._tools = list(first.tool_schemas)
        self.done = False
        self.final_answer: str | None = None
        self.result: VerifyResult | None = None
        self.user_message: str | None = None  # task environments script no user turns
        self.closed = False

    @property
    def url(self) -> str:
        return self._connection.url

    def tool_schemas(self) -> list[dict]:
        return list(self._tools)

    def system_prompt(self, override: str | None = None) -> str:
        return self.harness.system_prompt(override)

    def dispatch(self, call: ToolCall) -> Observation:
        started = time.perf_counter()
        if self.closed or self.done:
            raise RuntimeError("the remote session has ended; the episode should not dispatch more calls")
        # The arguments travel as JSON text that the server decodes once, so a non-object reaches its Session as it
        # is and gets the same answer as here.
        action = ProgAgentAction(
            tool_calls=[ToolCallModel(name=call.name, arguments=json.dumps(call.arguments), id=call.id or "")]
        )
        answer = self._connection.step(action, f"running a {call.name} call")
        observation = self._observation(answer)
        if answer.done:
            if observation.kind != "claim_done":
                raise RemoteEnvError(
                    f"the environment server {self.url} ended the episode ({answer.end_reason}) on a "
                    f"{observation.kind} call; only claim_done ends it there"
                )
            self.result = observation.verify = self._connection.verdict(answer)
            self.final_answer = answer.final_answer if isinstance(answer.final_answer, str) else None
            self.done = observation.done = True
        observation.seconds = time.perf_counter() - started
        return observation

    def _observation(self, answer: ProgAgentObservation) -> Observation:
        tool_messages = [m for m in answer.messages if m.get("role") == "tool"]
        if len(answer.calls) != 1 or len(tool_messages) != 1 or not isinstance(tool_messages[0].get("content"), str):
            raise RemoteEnvError(
                f"the environment server {self.url} answered one call with {len(answer.calls)} call "
                f"record(s) and {len(tool_messages)} tool message(s); expected one of each"
            )
        record = answer.calls[0]
        count = record.get("task_tool_calls")
        if (
            record.get("kind") not in CALL_KINDS
            or any(not isinstance(record.get(f), bool) for f in FLAGS)
            or isinstance(count, bool)
            or not isinstance(count, int)
            or not 0 <= count <= MAX_CALL_RECORDS
        ):
            raise RemoteEnvError(
                f"the environment server {self.url} sent an unreadable call record {str(record)[:200]}"
            )
        # The server reports how many task-tool calls the call caused, not their records (the episode keeps the count);
        # at most the runtime's MAX_CALL_RECORDS, which bounds the list a reply makes us build.
        return Observation(
            clean_text(tool_messages[0]["content"]),
            is_error=record["is_error"],
            kind=record["kind"],
            task_tool_calls=[{} for _ in range(count)],
            runtime_error=record["runtime_error"],
            timed_out=record["timed_out"],
            kernel_restarted=record["kernel_restarted"],
        )

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._connection.close()


def _check_same_instance(url: str, task: Any, seed: int, spec: HarnessSpec, first: ProgAgentObservation) -> None:
    """The server must serve the instance this trainer means: its instruction and tools are the local task's."""
    served = (first.task_id, first.seed, first.harness)
    if served != (task.id, seed, spec.name):
        raise RemoteEnvError(f"the environment server {url} started {served} for {(task.id, seed, spec.name)}")
    fix = "start the server on the same checkout of the task pool as the trainer"
    if first.instruction != task.instruction(seed):
        raise RemoteEnvError(
            f"the environment server {url} serves another version of {task.id}: its instruction for "
            f"seed {seed} differs from the local task's; {fix}"
        )
    if first.tool_schemas != json.loads(json.dumps(model_tool_schemas(spec, task.tool_schemas()))):
        raise RemoteEnvError(
            f"the environment server {url} serves another version of {task.id}: its tools under "
            f"{spec.name} differ from the local task's; {fix}"
        )


def _text(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected text, got {type(value).__name__}")
    return value


def _flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {type(value).__name__}")
    return value


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:500] or 'no detail'}"


def _close_quietly(client: Any) -> None:
    try:
        client.close()
    except Exception:  # noqa: BLE001 - leaving: the server releases the episode when the socket drops anyway
        pass


__all__ = ["EnvServers", "RemoteEnvError", "RemoteEnvironment", "RemoteSession", "check_server_url"]
