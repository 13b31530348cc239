"""`--policy ground-truth`: a suite's own reference calls replayed under a harness, then its reference answer handed in;
`--policy fixed-reference`: the memorization baseline on a suite, one task's reference replayed on every other task.

DTC and Hybrid: one direct call per turn, in the reference's order. PTC: all calls as ONE program of
`tools.<name>(**arguments)` lines (the arguments written as Python literals of their JSON values, so the kernel
receives exactly the reference's values). Then `claim_done` with the suite's reference answer (AgentDojo:
`GROUND_TRUTH_OUTPUT`, the text its own ground-truth pipeline ends with; empty where the task gives none).
A reference with several scripted user turns (BFCL multi-turn) is played turn by turn: each user turn's calls (one
program per user turn under PTC), then `claim_done`, after which the environment gives the next user message.
"""

from __future__ import annotations

from typing import Any

from ..errors import PolicyError
from ..harness.spec import CLAIM_DONE, PROGRAMMATIC_TOOL_CALL, HarnessSpec, get_harness
from ..harness.turn import ToolCall, Turn
from .base import Reference

NAME = "ground-truth"
FIXED_NAME = "fixed-reference"


def reference_program(calls: list[tuple[str, dict]]) -> str:
    """The reference calls as one program: `result_<i> = tools.<name>(arg=value, ...)` per call, then a short print."""
    lines = []
    for i, (name, arguments) in enumerate(calls, 1):
        if not name.isidentifier():
            raise PolicyError(f"the reference calls a tool whose name is not a Python identifier: {name!r}")
        written = ", ".join(f"{key}={value!r}" for key, value in arguments.items())
        lines.append(f"result_{i} = tools.{name}({written})")
    lines.append(f"print('ran {len(calls)} reference call(s)')")
    return "\n".join(lines)


class GroundTruthPolicy:
    """Plays an external task's `reference()` under one harness (`start_episode(task)` gives the per-episode player)."""

    name = NAME

    def __init__(self, harness: str):
        self.harness = get_harness(harness).name

    def start_episode(self, task: Any, params: dict | None = None) -> "GroundTruthEpisode":
        if not hasattr(task, "reference"):
            raise PolicyError(
                f"{NAME} plays external benchmark tasks only; {getattr(task, 'id', task)!r} has no reference"
            )
        return GroundTruthEpisode(task.reference(), self.harness)

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        raise PolicyError(f"{NAME} plays one episode at a time: run it through run_episode (start_episode(task))")


class FixedReferencePolicy:
    """The memorization baseline on an external suite: one stored solution per part of the suite, replayed verbatim
    on every task of that part, whatever the task asks. The stored solution is the reference of the part's LAST task
    (`sources`), so an evaluation of the first N tasks of each part (`--limit N`, N below the part's size) never
    includes it: what this baseline passes, one fixed call sequence passes without reading the task. A trained model
    that does no better than this has learnt a string, not the suite."""

    name = FIXED_NAME

    def __init__(self, harness: str, bench: Any):
        self.harness = get_harness(harness).name
        self.sources: dict[str, Any] = {}
        for task in bench.tasks.values():
            self.sources[task.group] = task  # the last of each part
        self._references: dict[str, Reference] = {}

    def start_episode(self, task: Any, params: dict | None = None) -> "GroundTruthEpisode":
        group = getattr(task, "group", None)  # a task of ours has no part: refused below
        source = self.sources.get(group) if isinstance(group, str) else None
        if source is None or not hasattr(source, "reference"):
            raise PolicyError(
                f"{FIXED_NAME} plays external benchmark tasks only; no part holds {getattr(task, 'id', task)!r}"
            )
        if source.id not in self._references:
            self._references[source.id] = source.reference()
        return GroundTruthEpisode(self._references[source.id], self.harness)

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        raise PolicyError(f"{FIXED_NAME} plays one episode at a time: run it through run_episode (start_episode(task))")


class GroundTruthEpisode:
    """The turns of one reference: the calls (one per turn, or one program), then claim_done. With several scripted
    user turns (BFCL), that per user turn: its calls, then claim_done, which hands the turn back to the user (the
    reference's answer on the last)."""

    def __init__(self, reference: Reference, harness: str | HarnessSpec):
        spec = get_harness(harness) if isinstance(harness, str) else harness
        self.turns = []
        user_turns = reference.user_turns()
        for index, calls in enumerate(user_turns):
            if not spec.direct_task_tools:  # the calls can only be made from a program
                self.turns += [(PROGRAMMATIC_TOOL_CALL, {"code": reference_program(calls)})] if calls else []
            else:
                self.turns += [(name, dict(arguments)) for name, arguments in calls]
            last = index == len(user_turns) - 1
            self.turns.append((CLAIM_DONE, {"action": reference.answer if last else ""}))
        self.step = 0

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        if self.step >= len(self.turns):
            raise PolicyError("the reference has no step left; claim_done should have ended the episode")
        name, arguments = self.turns[self.step]
        self.step += 1
        return Turn(tool_calls=[ToolCall(name, arguments)])


__all__ = ["FIXED_NAME", "FixedReferencePolicy", "GroundTruthPolicy", "GroundTruthEpisode", "NAME", "reference_program"]
