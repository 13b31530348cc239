"""The record of one episode: messages in OpenAI chat format, every tool call, the verdict and the metrics.

Trajectories are written one per line as JSON (`write_jsonl` appends, so a batch run can be killed and
resumed) and read back with `read_jsonl`.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Iterable, Iterator

from ..textsafe import escape_controls_in_json
from .end_reasons import is_errored, is_truncated
from .metrics import ProgramStructure
from .turn import ToolCall


@dataclass(kw_only=True)
class CallRecord(ToolCall):
    """One tool call the model made (its name, arguments and id, a ToolCall) and what came of it."""

    turn: int  # index of the assistant turn that made the call
    observation: str  # the text that entered the context
    observation_tokens: int
    seconds: float
    is_error: bool
    kind: str  # "task_tool" | "program" | "terminal" | "claim_done" | "invalid" | "malformed"
    task_tool_calls: int = 0  # task-tool calls it caused (1 for a direct call, N inside a program)
    runtime_error: bool = False  # a program raised
    timed_out: bool = False
    kernel_restarted: bool = False
    program: ProgramStructure | None = None  # for programmatic_tool_call


@dataclass
class Trajectory:
    """One episode of one policy on one task at one scale under one harness."""

    task_id: str
    scale: str
    seed: int
    harness: str
    policy: str
    sample: int = 0  # index among the K samples of the same (task, scale, seed, harness)
    instruction: str = ""  # the instance's rendered instruction (the first user message)
    params: dict = field(default_factory=dict)  # the instance's parameters (generator.params); {} for a task without
    messages: list[dict] = field(default_factory=list)  # OpenAI chat format
    tools: list[dict] = field(default_factory=list)  # the schemas the model saw
    calls: list[CallRecord] = field(default_factory=list)
    final_answer: str | None = None
    reward: float = 0.0  # R: 1 iff every criterion passed
    score: float = 0.0  # R~: weighted share of criteria passed
    criteria: list[dict] = field(default_factory=list)
    end_reason: str = ""  # one of harness.end_reasons.END_REASONS
    turns: int = 0
    tool_output_tokens: int = 0  # tokens of tool observations that entered the context
    context_tokens: int = 0  # the context's size at the end (prompt + everything generated)
    tool_calls: int = 0  # task-tool calls, direct and inside programs
    model_tool_calls: int = 0  # tool calls the model issued (programs count once)
    runtime_errors: int = 0  # programs that raised
    timeouts: int = 0
    malformed_calls: int = 0  # tool-call blocks the parser could not read
    token_counter: str = ""  # how tokens were counted ("tokenizer:NAME" or "approx-bpe")
    seconds: float = 0.0
    error: str = ""  # a policy failure that ended the episode

    @property
    def key(self) -> str:
        """Identifies the episode within a batch run (used to resume)."""
        return episode_key(self.task_id, self.scale, self.seed, self.harness, self.policy, self.sample)

    @property
    def errored(self) -> bool:
        """Ended by an infrastructure error (the policy or its server failed), not by the task: keep it out of pass rates."""
        return is_errored(self.end_reason)

    @property
    def truncated(self) -> bool:
        """Cut off by a budget (turns, tool calls, context, a turn's tokens) before the model finished."""
        return is_truncated(self.end_reason)

    @property
    def programs(self) -> list[ProgramStructure]:
        return [c.program for c in self.calls if c.program is not None]

    @property
    def dtc_like_programs(self) -> int:
        return sum(p.dtc_like for p in self.programs)

    # --- JSON ------------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Trajectory":
        known = {f.name for f in fields(cls)}
        data = {k: v for k, v in data.items() if k in known}
        calls = []
        for call in data.pop("calls", []):
            program = call.get("program")
            calls.append(CallRecord(**{**call, "program": ProgramStructure(**program) if program else None}))
        return cls(**data, calls=calls)

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> "Trajectory":
        return cls.from_dict(json.loads(line))


def episode_key(task_id: str, scale: str, seed: int, harness: str, policy: str, sample: int) -> str:
    return f"{task_id}|{scale}|seed{seed}|{harness}|{policy}|{sample}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_line(trajectory: Trajectory) -> bytes:
    """One record as UTF-8 bytes. A lone surrogate (a file name that is not UTF-8, decoded with
    surrogateescape) cannot be encoded: it is written as its JSON escape, which reads back the same.
    So are DEL, the C1 and the bidirectional controls (JSON escapes the C0 ones itself): a record
    shown in a terminal (`cat`, `tail -f`) cannot reverse its text or start a terminal command, and
    what it holds (the model's own turns too) reads back exactly as it was."""
    line = _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", escape_controls_in_json(trajectory.to_json()))
    return line.encode("utf-8") + b"\n"


def write_jsonl(trajectories: Trajectory | Iterable[Trajectory], path: str | Path) -> None:
    """Append trajectories to a JSON-lines file (one flushed line each, so a killed run loses at most one)."""
    if isinstance(trajectories, Trajectory):
        trajectories = [trajectories]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("ab") as out:
        # A writer killed mid-line leaves no newline: start on a fresh line so the next record stays whole.
        if out.tell() > 0:
            with path.open("rb") as existing:
                existing.seek(-1, 2)
                if existing.read(1) != b"\n":
                    out.write(b"\n")
        for trajectory in trajectories:
            out.write(_json_line(trajectory))  # encoded whole first: a record that fails leaves no half line
            out.flush()


def iter_jsonl(path: str | Path) -> Iterator[Trajectory]:
    """Read trajectories back, byte by byte safe: a line cut short by a killed writer (even inside a
    multi-byte character) or otherwise unreadable is skipped with a warning."""
    with Path(path).open("rb") as lines:
        for number, raw in enumerate(lines, 1):
            if not raw.strip():
                continue
            try:
                yield Trajectory.from_json(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError, TypeError, KeyError, AttributeError) as exc:
                warnings.warn(
                    f"{path}:{number}: skipped a line that is not a whole trajectory (a killed run?): "
                    f"{type(exc).__name__}",
                    stacklevel=2,
                )


def read_jsonl(path: str | Path) -> list[Trajectory]:
    return list(iter_jsonl(path))


def messages_for_chat_template(messages: list[dict]) -> list[dict]:
    """The messages with tool-call arguments as dicts, as Hugging Face chat templates expect.

    Trajectories keep OpenAI's format (arguments as a JSON string), which remote APIs require; Qwen's
    templates iterate over the arguments, so they need the decoded object.
    """
    converted = []
    for message in messages:
        if message.get("tool_calls"):
            calls = []
            for call in message["tool_calls"]:
                function = dict(call["function"])
                if isinstance(function.get("arguments"), str):
                    try:
                        function["arguments"] = json.loads(function["arguments"])
                    except json.JSONDecodeError:
                        pass
                calls.append({**call, "function": function})
            message = {**message, "tool_calls": calls}
        converted.append(message)
    return converted
