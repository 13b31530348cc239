"""One episode's tools under one harness: the single place where a model's tool call is carried out.

`Session.dispatch(ToolCall) -> Observation` is shared by the episode loop (`run_episode`), the MCP
server and the RL rollouts, so every front end applies the same rules:

- `programmatic_tool_call(code)` runs the program in the episode's persistent kernel (PTC, Hybrid);
- `terminal(command)` runs a shell command confined to the workspace;
- `claim_done(action)` hands `action` to the verifier and ends the episode (later calls are refused; an action
  past MAX_ANSWER_CHARS is refused with an error that names the bound, and the episode goes on); where the
  environment scripts further user turns (`env.next_user_message(reply)`, BFCL multi-turn), it ends the model's
  turn instead and the user's next message is left in `user_message` for the episode to append;
- a task tool runs directly under DTC and Hybrid; under PTC the model is told to call it from a program.
  A direct call goes through the same `runtime.bridge.ToolRouter` as a call inside a program, so the
  error mode (`is_error`, `off`, `detect`) is applied in one place, the bridge, for both;
- an unknown tool or bad arguments give an error observation. `dispatch` never raises for model mistakes;
- every observation's text is cleaned (`textsafe.clean_text`) on its way out, whatever produced it (a
  program, a shell command, a direct tool's text or JSON result, an error message): what reaches the
  model, the MCP client and the trajectory holds no character that a terminal or a renderer would obey.

The kernel is started lazily, on the first program or terminal command, so DTC episodes that never
use them cost no kernel. Its output bound is the harness's (`HarnessSpec.output_bound`), handed to the runtime
here and nowhere else.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..runtime.bridge import ToolRouter  # applies the error mode, for direct calls as for calls in programs
from ..task import VerifyResult
from ..task.verification import MAX_ANSWER_CHARS
from ..textsafe import clean_text
from .spec import CLAIM_DONE, PROGRAMMATIC_TOOL_CALL, TERMINAL, HarnessSpec, get_harness, model_tool_schemas
from .turn import ToolCall


@dataclass
class Observation:
    """What the model gets back for one ToolCall, plus what the harness records about it."""

    content: str  # text that enters the model's context (cleaned: textsafe.clean_text)
    is_error: bool
    done: bool = False  # True after claim_done
    kind: str = "invalid"  # "task_tool" | "program" | "terminal" | "claim_done" | "invalid"
    task_tool_calls: list[dict] = field(
        default_factory=list
    )  # task-tool calls it caused: name, arguments, is_error, ...
    runtime_error: bool = False  # a program raised
    timed_out: bool = False
    kernel_restarted: bool = False
    truncated: bool = False
    seconds: float = 0.0
    value: Any = None  # the tool's Python result for a direct task-tool call (not sent to the model)
    verify: VerifyResult | None = None  # the verifier's verdict, after claim_done


def render_result(value: Any) -> str:
    """How a task tool's result is shown to the model: text as is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


class Session:
    """The tools of one episode under one harness. Use as a context manager, or call close().

    `runtime_kwargs` go to `PTCRuntime` (mcp_servers, unsafe_no_sandbox, memory_limit, ...), all but the output
    bound, which is the harness's; a `runtime` handed in must have that bound too.
    """

    def __init__(
        self,
        env,
        harness: str | HarnessSpec,
        *,
        error_mode: str = "is_error",
        runtime=None,
        pool=None,
        program_timeout: float | None = None,
        terminal_timeout: float | None = None,
        **runtime_kwargs: Any,
    ):
        self.harness = get_harness(harness) if isinstance(harness, str) else harness
        _check_output_bound(self.harness, runtime, runtime_kwargs)
        self._router = ToolRouter(env, error_mode=error_mode)  # refuses an unknown error mode
        self.env = env
        self.error_mode = error_mode
        self.program_timeout = program_timeout
        self.terminal_timeout = terminal_timeout
        self._runtime = runtime
        self._owns_runtime = runtime is None
        self._pool = pool
        self._runtime_kwargs = runtime_kwargs
        self._task_tools = set(env.tool_specs)
        self.done = False
        self.final_answer: str | None = None
        self.result: VerifyResult | None = None
        self.user_message: str | None = None  # a scripted user's next message, after claim_done ended a user turn
        self.closed = False

    # --- what the model sees ----------------------------------------------------------------------
    def tool_schemas(self) -> list[dict]:
        """Every tool the model may call directly under this harness (OpenAI function format)."""
        return model_tool_schemas(self.harness, self.env.tool_schemas())

    def system_prompt(self, override: str | Path | None = None) -> str:
        return self.harness.system_prompt(override)

    @property
    def runtime(self):
        """The episode's PTC runtime (kernel + terminal), started on first use."""
        if self._runtime is None:
            from ..runtime import PTCRuntime  # imported here: DTC-only users need no kernel machinery

            self._runtime = PTCRuntime(
                self.env,
                error_mode=self.error_mode,
                pool=self._pool,
                max_output_chars=self.harness.output_bound,
                **self._runtime_kwargs,
            )
        return self._runtime

    # --- one tool call ----------------------------------------------------------------------------
    def dispatch(self, call: ToolCall) -> Observation:
        started = time.perf_counter()
        observation = self._dispatch(call)
        observation.content = clean_text(observation.content)
        observation.seconds = time.perf_counter() - started
        return observation

    def _dispatch(self, call: ToolCall) -> Observation:
        if self.closed:
            return _error("The session is closed; no more tool calls are accepted.")
        if self.done:
            return _error("The episode has ended: claim_done was already called. No more tool calls are accepted.")
        if not isinstance(call.arguments, dict):
            return _error(
                f"The arguments of {call.name!r} must be a JSON object of named parameters, "
                f"got {type(call.arguments).__name__}."
            )
        if call.name == PROGRAMMATIC_TOOL_CALL and self.harness.programmatic:
            code = _required_string(call, "code")
            return code if isinstance(code, Observation) else self._run_program(code)
        if call.name == TERMINAL:
            command = _required_string(call, "command")
            return command if isinstance(command, Observation) else self._run_terminal(command)
        if call.name == CLAIM_DONE:
            action = _required_string(call, "action")
            return action if isinstance(action, Observation) else self._claim_done(action)
        if call.name in self._task_tools:
            if not self.harness.direct_task_tools:
                return _error(
                    f"{call.name} cannot be called directly under this harness. Call it inside a program: "
                    f"use {PROGRAMMATIC_TOOL_CALL} with code such as `result = tools.{call.name}(...)` and print "
                    f"what you need from `result`."
                )
            return self._run_task_tool(call)
        available = [s["function"]["name"] for s in self.tool_schemas()]
        return _error(f"There is no tool named {call.name!r}. Available tools: {', '.join(available)}.")

    def _run_task_tool(self, call: ToolCall) -> Observation:
        record = {"name": call.name, "arguments": call.arguments}
        # The router applies the error mode: under "off" (the paper's ablation) a failure comes back as an
        # ordinary result, its message; under "detect" an error-shaped result comes back as an error.
        value, error = self._router.call(call.name, call.arguments)
        if error is not None:
            return Observation(
                f"Error: {error}",
                is_error=True,
                kind="task_tool",
                task_tool_calls=[{**record, "is_error": True, "error": error}],
            )
        return Observation(
            render_result(value),
            is_error=False,
            kind="task_tool",
            task_tool_calls=[{**record, "is_error": False}],
            value=value,
        )

    def _run_program(self, code: str) -> Observation:
        result = self.runtime.execute(code, timeout=self.program_timeout)
        calls = [_program_call_record(c) for c in (result.tool_calls or [])]
        raised = result.error is not None and not result.timed_out
        return Observation(
            result.observation,
            is_error=raised or result.timed_out,
            kind="program",
            task_tool_calls=calls,
            runtime_error=raised,
            timed_out=result.timed_out,
            kernel_restarted=result.kernel_restarted,
            truncated=result.truncated,
        )

    def _run_terminal(self, command: str) -> Observation:
        result = self.runtime.terminal(command, timeout=self.terminal_timeout)
        return Observation(
            result.observation,
            is_error=result.exit_code != 0 or result.timed_out,
            kind="terminal",
            timed_out=result.timed_out,
            truncated=result.truncated,
        )

    def _claim_done(self, action: str) -> Observation:
        # A suite with scripted user turns (BFCL multi-turn) takes `action` as the reply that ends the model's
        # turn and answers with the user's next message; the episode appends it after this turn's tool messages.
        next_user_message = getattr(self.env, "next_user_message", None)
        follow_up = next_user_message(action) if next_user_message is not None else None
        if follow_up is not None:
            self.user_message = follow_up
            return Observation(
                "Your reply was handed to the user; their next message follows.", is_error=False, kind="claim_done"
            )
        if len(action) > MAX_ANSWER_CHARS:  # refused before any verifier reads it; the episode goes on
            return _error(
                f"{CLAIM_DONE}'s action has {len(action):,} characters; a final answer may have at most "
                f"{MAX_ANSWER_CHARS:,}. Nothing was submitted: call {CLAIM_DONE} again with a shorter answer."
            )
        self.result = self.env.verify(action)
        self.final_answer = action
        self.done = True
        return Observation(
            "Your answer was submitted; the episode is over.",
            is_error=False,
            done=True,
            kind="claim_done",
            verify=self.result,
        )

    # --- lifecycle --------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the kernel this session started (a runtime handed in stays with its owner)."""
        if self.closed:
            return
        self.closed = True
        if self._runtime is not None and self._owns_runtime:
            self._runtime.close()

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _check_output_bound(harness: HarnessSpec, runtime: Any, runtime_kwargs: dict) -> None:
    """The harness alone sets how much of a program's output the model reads."""
    if "max_output_chars" in runtime_kwargs:
        raise TypeError(
            f"Session takes no max_output_chars: the output bound is the harness's ({harness.name!r}: "
            f"output_bound={harness.output_bound}); register a HarnessSpec with the bound you want"
        )
    if runtime is not None and runtime.max_output_chars != harness.output_bound:
        raise ValueError(
            f"the runtime handed in keeps {runtime.max_output_chars} characters of output, the harness "
            f"{harness.name!r} {harness.output_bound}; build it with "
            "max_output_chars=harness.output_bound"
        )


def _error(message: str) -> Observation:
    return Observation(f"Error: {message}", is_error=True, kind="invalid")


def _required_string(call: ToolCall, parameter: str) -> str | Observation:
    unknown = sorted(set(call.arguments) - {parameter})
    value = call.arguments.get(parameter)
    if not isinstance(value, str):
        got = "nothing" if value is None else type(value).__name__
        return _error(f"{call.name} needs one string parameter {parameter!r}; got {got}.")
    if unknown:
        return _error(f"{call.name} takes only the parameter {parameter!r}; unknown: {unknown}.")
    return value


def _program_call_record(call: Any) -> dict:
    """The runtime's record of one in-program tool call, as a plain dict."""
    if isinstance(call, dict):
        return dict(call)
    keys = ("name", "arguments", "is_error", "seconds", "result_chars", "error")
    return {k: getattr(call, k) for k in keys if hasattr(call, k)}
