"""The memorization baseline: the teacher's turns on one training instance, replayed verbatim on another.

What a model that memorised one string per task would score. The teacher plays the training instance
(task, `train_scale`, `train_seed`) under the harness; its assistant turns (tool calls with their exact
arguments: the same programs, the same direct calls, the same parameter literals) are replayed on the
evaluation instance, and in place of the teacher's own `claim_done` answer (which quotes the training
instance's result) the replay hands in the last observation it received on the evaluation instance.

On a task whose instruction is the same for every seed this passes whenever the teacher's program reads
its data (it does): one fixed program solves every instance. On a task with instance parameters the
replayed program carries the training instance's parameters, and fails wherever they matter.
"""

from __future__ import annotations

import json
from typing import Any

from ..harness.episode import run_episode
from ..harness.spec import CLAIM_DONE, DEFAULT_HARNESS, get_harness
from ..harness.turn import ToolCall, Turn
from .oracle import OracleTeacher


def teacher_turns(task, harness: str, scale: str = "v0", seed: int = 0) -> list[list[ToolCall]]:
    """The teacher's turns on (task, scale, seed) under `harness`, as the tool calls of each assistant message."""
    trajectory = run_episode(task, scale, seed, harness, OracleTeacher(harness))
    if trajectory.reward != 1.0:
        raise RuntimeError(
            f"the {harness} teacher does not solve {task.id} at {scale}, seed {seed} "
            f"(R = {trajectory.reward}, {trajectory.end_reason}): nothing to memorise"
        )
    turns = []
    for message in trajectory.messages:
        if message.get("role") != "assistant":
            continue
        calls = []
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            calls.append(
                ToolCall(
                    call["function"]["name"],
                    json.loads(arguments) if isinstance(arguments, str) else arguments,
                    call.get("id", ""),
                )
            )
        turns.append(calls)
    return turns


class MemorizationPolicy:
    """`MemorizationPolicy(harness, train_seed=0, train_scale="v0")`: the teacher's turns of the training instance,
    replayed on whichever instance the episode is; the answer is the last observation."""

    def __init__(self, harness: str = DEFAULT_HARNESS, train_seed: int = 0, train_scale: str = "v0"):
        self.harness = get_harness(harness).name
        self.train_seed, self.train_scale = int(train_seed), train_scale
        self.name = f"memorize:{self.train_scale}:seed{self.train_seed}"
        self._turns: dict[str, list[list[ToolCall]]] = {}
        self.default_limits = OracleTeacher.default_limits  # the budgets of the teacher it copies

    def recorded(self, task) -> list[list[ToolCall]]:
        """The memorised turns of `task` (played once per task, then reused)."""
        if task.id not in self._turns:
            self._turns[task.id] = teacher_turns(task, self.harness, self.train_scale, self.train_seed)
        return self._turns[task.id]

    def start_episode(self, task, params: dict | None = None) -> "_MemorizedEpisode":
        return _MemorizedEpisode(self.recorded(task))

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        raise TypeError("MemorizationPolicy replays one task's turns: run it through run_episode (start_episode(task))")


class NearestMemorizationPolicy:
    """The memorization baseline of a training run: a lookup table from every trained instruction to the teacher's
    turns on that instance. On an episode it replays the turns of the trained instance whose instruction is nearest
    to the episode's (word-set Jaccard; an identical instruction first), and hands in the last observation.

    What a model scores that memorised every training program and retrieves one by its request: it passes a held-out
    seed whose request a trained instance had (split (a)), and nothing that needs another request (b) or task (c).
    `training`: (task, scale, seed) instances, in order (ties go to the first)."""

    def __init__(self, harness: str, training: list[tuple[Any, str, int]]):
        if not training:
            raise ValueError("NearestMemorizationPolicy needs at least one training instance")
        self.harness = get_harness(harness).name
        self.training = [
            (task, scale, int(seed), _words(task.instruction(int(seed)))) for task, scale, seed in training
        ]
        self.name = f"memorize:nearest-of-{len(self.training)}"
        self._turns: dict[tuple[str, str, int], list[list[ToolCall]]] = {}
        self.default_limits = OracleTeacher.default_limits

    def nearest(self, instruction: str) -> tuple[Any, str, int]:
        words = _words(instruction)
        best = max(self.training, key=lambda item: len(words & item[3]) / max(len(words | item[3]), 1))
        return best[0], best[1], best[2]

    def start_episode(self, task, params: dict | None = None) -> "_MemorizedEpisode":
        instruction = task.instruction(params if params is not None else task.params_for(0))
        trained, scale, seed = self.nearest(instruction)
        key = (trained.id, scale, seed)
        if key not in self._turns:
            self._turns[key] = teacher_turns(trained, self.harness, scale, seed)
        return _MemorizedEpisode(self._turns[key])

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        raise TypeError("NearestMemorizationPolicy replays recorded turns: run it through run_episode")


def _words(text: str) -> frozenset[str]:
    return frozenset(text.lower().split())


class _MemorizedEpisode:
    def __init__(self, turns: list[list[ToolCall]]):
        self.remaining = [list(t) for t in turns]

    def act(self, messages: list[dict], tools: list[dict]) -> Turn:
        if not self.remaining:
            return Turn(tool_calls=[ToolCall(CLAIM_DONE, {"action": _last_observation(messages)}, "memorized_end")])
        calls = []
        for call in self.remaining.pop(0):
            if call.name == CLAIM_DONE:  # the training instance's answer would quote its own result
                call = ToolCall(CLAIM_DONE, {"action": _last_observation(messages)}, call.id)
            calls.append(call)
        return Turn(tool_calls=calls)


def _last_observation(messages: list[dict]) -> str:
    for message in reversed(messages):
        if message.get("role") == "tool":
            return str(message.get("content", "")).strip()
    return ""


def replay_memorized(
    tasks: list[Any],
    harness: str = DEFAULT_HARNESS,
    scale: str = "v0",
    train_seed: int = 0,
    eval_seeds: tuple[int, ...] = (1000, 1001, 1002, 1003),
    progress: bool = True,
) -> list:
    """The memorization baseline on every (task, eval seed) at `scale`; returns the trajectories."""
    from tqdm.auto import tqdm

    policy = MemorizationPolicy(harness, train_seed, scale)
    trajectories = []
    jobs = [(task, seed) for task in tasks for seed in eval_seeds]
    for task, seed in tqdm(jobs, desc=f"memorization replay ({harness})", unit="episode", disable=not progress):
        trajectories.append(run_episode(task, scale, seed, harness, policy))
    return trajectories


__all__ = ["MemorizationPolicy", "NearestMemorizationPolicy", "replay_memorized", "teacher_turns"]
