"""Can a config be learned from? The teacher's own turns, replayed through the training rollout under the
config's limits, must reach R = 1, and its whole conversation must fit SFT's `max_length`.

`teacher_needs` plays the teacher (message level), proves that the chat template renders it the same whole
and turn by turn, replays it through the token adapter without limits, and measures what the episode needs:
turns, tool calls, the longest turn, the context, the SFT length. `check_learnable` compares those needs with
a config's limits and names every limit that is too small and the value it needs. `progagent train` runs it
before any compute is spent.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ..harness.episode import Limits

UNLIMITED = Limits(max_tool_calls=None, max_turns=None, max_context_tokens=None)


class NotLearnableError(ValueError):
    """A config under which the teacher itself cannot finish an episode (so R = 0 for every policy)."""


@dataclass
class TeacherNeeds:
    task_id: str
    harness: str
    scale: str
    seed: int
    turns: int
    model_tool_calls: int
    longest_turn_tokens: int  # the longest assistant turn, through its end-of-turn token
    context_tokens: int  # prompt + all turns + observations at claim_done
    sft_tokens: int  # the whole conversation as SFT tokenises it
    reward: float  # the teacher's R when replayed without limits

    def violations(self, limits: Limits, max_length: int | None) -> list[str]:
        where = f"the {self.harness} teacher on {self.task_id} ({self.scale}, seed {self.seed})"
        found = []
        if limits.max_turns is not None and self.turns > limits.max_turns:
            found.append(f"max_turns={limits.max_turns}: {where} needs {self.turns} turns")
        if limits.max_tool_calls is not None and self.model_tool_calls > limits.max_tool_calls:
            found.append(f"max_tool_calls={limits.max_tool_calls}: {where} needs {self.model_tool_calls} tool calls")
        if limits.max_new_tokens is not None and self.longest_turn_tokens > limits.max_new_tokens:
            found.append(
                f"max_new_tokens={limits.max_new_tokens}: {where} writes a turn of {self.longest_turn_tokens} tokens"
            )
        if limits.max_context_tokens is not None and self.context_tokens > limits.max_context_tokens:
            found.append(f"max_context_tokens={limits.max_context_tokens}: {where} needs {self.context_tokens} tokens")
        if max_length is not None and self.sft_tokens > max_length:
            found.append(f"sft.max_length={max_length}: {where} is {self.sft_tokens} tokens long")
        return found


def teacher_needs(
    task: Any,
    harness: str,
    chat: Any,
    *,
    scale: str = "v0",
    seed: int = 0,
    limits: Limits | None = None,
    reading: bool = False,
) -> tuple[TeacherNeeds, Any]:
    """Measure one teacher episode (the reading teacher's with `reading`); with `limits`, also return the replay
    under them (its trajectory)."""
    from ..harness.episode import run_episode
    from ..policy import OracleTeacher
    from ..generation import ReplayTurns
    from .rollout import RolloutSpec, run_token_episodes

    teacher = OracleTeacher(harness, reading=reading)
    played = run_episode(task, scale, seed, harness, teacher, UNLIMITED, tokenizer=chat.tokenizer)
    chat.check_conversation(played.messages, played.tools)
    script = chat.assistant_turns(played.messages, played.tools)
    replay = run_token_episodes([RolloutSpec(task, scale, seed)], harness, chat, ReplayTurns([script]), UNLIMITED)[0]
    ids, _ = chat.tokenize_conversation(played.messages, played.tools)
    needs = TeacherNeeds(
        task.id,
        harness,
        scale,
        seed,
        replay.turns,
        replay.model_tool_calls,
        max(len(turn) for turn in script),
        len(replay.prompt_ids) + len(replay.completion_ids),
        len(ids),
        replay.reward,
    )
    limited = None
    if limits is not None:
        limited = run_token_episodes(
            [RolloutSpec(task, scale, seed)], harness, chat, ReplayTurns([list(script)]), limits
        )[0].trajectory
    return needs, limited


def measure(
    tasks: list[Any], harnesses: list[str], chat: Any, *, scale: str = "v0", seed: int = 0, reading: bool = False
) -> list[TeacherNeeds]:
    return [
        teacher_needs(task, harness, chat, scale=scale, seed=seed, reading=reading)[0]
        for harness in harnesses
        for task in tasks
    ]


def problems_of(
    needs: TeacherNeeds, limits: list[Limits], max_length: int | None, model_positions: int | None
) -> list[str]:
    """Every reason the teacher cannot finish this (task, harness) under the limits, each naming what it needs."""
    found = []
    if needs.reward < 1:
        found.append(
            f"the {needs.harness} teacher on {needs.task_id} does not reach R = 1 even without limits "
            f"(R = {needs.reward})"
        )
    for budget in limits:
        found += [v for v in needs.violations(budget, max_length) if v not in found]
    if model_positions is not None and needs.context_tokens > model_positions:
        found.append(
            f"the model's {model_positions} positions: the {needs.harness} teacher on {needs.task_id} needs "
            f"{needs.context_tokens} tokens of context"
        )
    return found


def check_learnable(
    tasks: list[Any],
    harnesses: list[str],
    chat: Any,
    limits: Limits | list[Limits],
    *,
    max_length: int | None,
    scale: str = "v0",
    seed: int = 0,
    model_positions: int | None = None,
    measured: list[TeacherNeeds] | None = None,
) -> list[TeacherNeeds]:
    """Refuse (NotLearnableError, every offending limit named with the value it needs) unless the teacher can finish
    every (task, harness) under `limits` and SFT's `max_length`; and the context budget must fit the model."""
    budgets = limits if isinstance(limits, list) else [limits]
    problems = []
    for budget in budgets:
        if (
            model_positions is not None
            and budget.max_context_tokens is not None
            and budget.max_context_tokens > model_positions
        ):
            problems.append(
                f"max_context_tokens={budget.max_context_tokens} exceeds the model's {model_positions} "
                "positions (name the model with a scaled context, e.g. smollm2@32k, or lower the budget)"
            )
    if measured is None:
        measured = measure(tasks, harnesses, chat, scale=scale, seed=seed)
    for needs in measured:
        if needs.harness in harnesses:
            problems += problems_of(needs, budgets, max_length, model_positions)
    if problems:
        raise NotLearnableError(
            "the teacher cannot finish under this config, so no policy can earn a reward:\n  - "
            + "\n  - ".join(dict.fromkeys(problems))
        )
    return measured


def check_template_on_teacher(chat: Any, task: Any, harness: str, *, turns: int = 3) -> None:
    """Before training or evaluation: a short teacher episode (its first `turns` turns, real tool results) rendered
    whole and turn by turn must agree (ChatFormatError, naming the model, template and position, if not)."""
    from ..harness.episode import run_episode
    from ..policy import OracleTeacher

    short = Limits(max_turns=turns, max_tool_calls=None, max_context_tokens=None)
    played = run_episode(task, "v0", 0, harness, OracleTeacher(harness), short, tokenizer=chat.tokenizer)
    chat.check_conversation(played.messages, played.tools)


def needs_table(measured: list[TeacherNeeds]) -> list[dict]:
    return [asdict(n) for n in measured]
