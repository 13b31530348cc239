"""A policy that replays raw model texts: recorded outputs, hand-written turns, or a debugging script.

Each turn is parsed exactly as a local model's output is (`parse_tool_calls`), so replaying a model's
raw generations reproduces its episode against a fresh environment.
"""

from __future__ import annotations

from pathlib import Path

from ..harness.parsing import parse_tool_calls
from ..harness.turn import Turn


class ReplayPolicy:
    """`ReplayPolicy(["<tool_call>...</tool_call>", ...])`; after the last text it answers with an empty turn."""

    def __init__(self, texts: list[str], name: str = "replay"):
        self.texts = list(texts)
        self.name = name

    @classmethod
    def from_file(cls, path: str | Path) -> "ReplayPolicy":
        """Turns separated by a line holding only `---`."""
        text = Path(path).read_text()
        return cls([t.strip("\n") for t in text.split("\n---\n")], name=f"replay:{path}")

    def start_episode(self, task, params: dict | None = None) -> "_Replay":
        return _Replay(self.texts)


class _Replay:
    def __init__(self, texts: list[str]):
        self.remaining = list(texts)

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        raw = self.remaining.pop(0) if self.remaining else ""
        parsed = parse_tool_calls(raw, tools)
        return Turn(
            text=parsed.content, tool_calls=parsed.tool_calls, parse_errors=parsed.errors, reasoning=parsed.reasoning
        )
