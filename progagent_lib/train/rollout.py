"""Episodes token in / token out: the token adapter that GSPO trains on and that evaluation scores.

There is one episode (`progagent_lib.harness.episode.Episode`, the same object `run_episode` steps); this
module only adapts it to tokens. Per turn, the generated tokens are decoded, parsed and handed to the
episode, which runs the calls, cuts observations, writes feedback and keeps every metric. The tokens the
environment adds between turns come from the tokenizer's own chat template (`ChatFormat`: the difference
between two renders) and go in with `env_mask` 0, so the loss never trains the model to predict them.

One episode that raises (its environment cannot be built, a turn's dispatch or the verifier fails) must not
take the batch down: it ends errored, with the exception's text, and GSPO leaves it out of the loss (no token
trained, its group's mean reward) as it does an episode whose policy failed; the other episodes go on.

    completion_ids = [turn 1 tokens][env block 1][turn 2 tokens][env block 2] ... [last turn tokens]
    env_mask       = [1 1 1 ... 1  ][0 0 ... 0  ][1 1 ... 1     ][0 0 ... 0  ] ... [1 ... 1        ]
"""

from __future__ import annotations

import os
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any, Callable

from ..harness.chat_format import ChatFormat
from ..errors import PolicyError
from ..generation.turns import TurnGenerator, TurnOutput, decode_turn
from ..harness.end_reasons import is_truncated
from ..harness.episode import INFRASTRUCTURE_END_REASONS, Episode, Limits
from ..harness.summary import episode_summary
from ..harness.trajectory import Trajectory
from ..task.verification import describe_exception


@dataclass
class RolloutSpec:
    """Which episode to play: a task at one scale and seed (and which of K samples it is)."""

    task: Any
    scale: str
    seed: int
    sample: int = 0


@dataclass
class EpisodeTokens:
    """One episode as the trainer needs it (tokens, mask, log-probs) and as everything else reads it (trajectory)."""

    prompt_ids: list[int]
    trajectory: Trajectory
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)  # 1 = model token (trained), 0 = environment token
    logprobs: list[float] = field(default_factory=list)
    seconds_generate: float = 0.0
    seconds_environment: float = 0.0

    # The trajectory's metrics, so dynamics code reads one definition.
    reward = property(lambda self: self.trajectory.reward)
    score = property(lambda self: self.trajectory.score)
    end_reason = property(lambda self: self.trajectory.end_reason)
    errored = property(lambda self: self.trajectory.errored)
    turns = property(lambda self: self.trajectory.turns)
    tool_calls = property(lambda self: self.trajectory.tool_calls)
    model_tool_calls = property(lambda self: self.trajectory.model_tool_calls)
    runtime_errors = property(lambda self: self.trajectory.runtime_errors)
    malformed_calls = property(lambda self: self.trajectory.malformed_calls)
    tool_output_tokens = property(lambda self: self.trajectory.tool_output_tokens)

    @property
    def truncated(self) -> bool:
        return is_truncated(self.end_reason)


# The end reason of an errored episode: the one infrastructure reason, which `Trajectory.errored`, the
# summaries and GSPO's loss mask all read; `Trajectory.error` says what failed.
ERRORED = "policy_error"
assert ERRORED in INFRASTRUCTURE_END_REASONS


def mark_errored(trajectory: Trajectory, error: str) -> None:
    """End the episode as errored (whatever ended it before): no verdict, left out of every mean and the loss."""
    trajectory.end_reason = ERRORED
    trajectory.error = error
    trajectory.reward = trajectory.score = 0.0
    trajectory.criteria = []


def episode_error(exc: BaseException, doing: str) -> str:
    return f"the episode raised while {doing}: {describe_exception(exc, 2_000)}"


class TokenEpisode:
    """An `Episode` advanced by generated tokens, so a batch of them can share each generate call."""

    def __init__(self, episode: Episode, chat: ChatFormat):
        self.episode, self.chat = episode, chat
        self.failed = False  # the episode raised: it is closed without a verdict
        self._rendered = chat.prompt_ids(episode.messages, episode.tools)
        self.tokens = EpisodeTokens(prompt_ids=list(self._rendered), trajectory=episode.trajectory)
        episode.report_context_tokens(len(self._rendered))

    @property
    def finished(self) -> bool:
        return self.failed or self.episode.finished

    def fail(self, exc: BaseException, doing: str) -> None:
        """The episode raised `exc`: it ends errored and takes no more turns."""
        self.failed = True
        mark_errored(self.episode.trajectory, episode_error(exc, doing))

    def context_ids(self) -> list[int]:
        return self.tokens.prompt_ids + self.tokens.completion_ids

    def turn_budget(self) -> int:
        limits = self.episode.limits
        budget = limits.max_new_tokens if limits.max_new_tokens is not None else 1 << 30
        if limits.max_context_tokens is not None:
            budget = min(budget, limits.max_context_tokens - len(self.context_ids()))
        return max(budget, 0)

    def add_turn(self, turn: TurnOutput) -> None:
        """Append the model's tokens (env_mask 1), hand the decoded turn to the episode, append what it adds."""
        tokens, episode = self.tokens, self.episode
        context = len(self.context_ids())
        tokens.completion_ids += turn.token_ids
        tokens.env_mask += [1] * len(turn.token_ids)
        tokens.logprobs += list(turn.logprobs)
        started = time.perf_counter()
        try:
            before = len(episode.messages)
            episode.add_turn(decode_turn(self.chat, turn.token_ids, episode.tools, prompt_tokens=context))
            if episode.finished:  # claim_done, a budget, or a turn cut before its end-of-turn token
                return
            assert len(episode.messages) > before
            block = self.chat.environment_tokens(self._rendered, episode.messages, episode.tools)
            self._rendered = self.chat.render(episode.messages, episode.tools, generation_prompt=True)
            tokens.completion_ids += block
            tokens.env_mask += [0] * len(block)
            tokens.logprobs += [0.0] * len(block)
            episode.report_context_tokens(len(self.context_ids()))
        finally:
            tokens.seconds_environment += time.perf_counter() - started

    def close(self) -> EpisodeTokens:
        """Score (the episode's own verdict) and release the environment. Never raises for the episode's own
        failure: a verifier or a release that raises marks it errored."""
        started = time.perf_counter()
        try:
            if not self.failed:
                if not self.episode.finished:
                    self.episode.fail("the rollout stopped before the episode ended")
                try:
                    self.episode.to_trajectory()
                except Exception as exc:  # noqa: BLE001 - this episode's failure, not the batch's
                    self.fail(exc, "scoring the episode")
        finally:
            try:
                self.episode.close()
            except Exception as exc:  # noqa: BLE001 - as above: its resources may leak, the batch goes on
                self.fail(exc, "releasing its environment")
            self.tokens.seconds_environment += time.perf_counter() - started
        return self.tokens


class _UnbuiltEpisode:
    """An episode whose environment or session could not be built: errored from the start, nothing to play."""

    def __init__(self, spec: RolloutSpec, harness: str, chat: ChatFormat, policy_name: str, exc: BaseException):
        trajectory = Trajectory(
            task_id=getattr(spec.task, "id", str(spec.task)),
            scale=spec.scale,
            seed=spec.seed,
            harness=harness,
            policy=policy_name,
            sample=spec.sample,
        )
        mark_errored(trajectory, episode_error(exc, "starting"))
        try:  # the task's instruction, so the trainer gets a prompt as for any episode (its loss is masked)
            prompt = chat.prompt_ids([{"role": "user", "content": spec.task.instruction(spec.seed)}], None)
        except Exception:  # noqa: BLE001 - no prompt can be rendered: an empty one
            prompt = []
        self.tokens = EpisodeTokens(prompt_ids=list(prompt), trajectory=trajectory)
        self.finished = True

    def close(self) -> EpisodeTokens:
        return self.tokens


def run_token_episodes(
    specs: list[RolloutSpec],
    harness: str,
    chat: ChatFormat,
    generate_turns: TurnGenerator,
    limits: Limits,
    *,
    policy_name: str = "",
    error_mode: str = "is_error",
    session_kwargs: dict | None = None,
    env_host: Any = None,
    seed_by_instance: bool = False,
) -> list[EpisodeTokens]:
    """Play a batch of episodes; their results come back in the order of `specs`.

    A generator that takes one-context calls from several threads (`continuous`, the engine's) plays them without
    lockstep: each episode's next turn is requested as soon as its last one has been played, so the engine always
    has every live episode's request and the host steps one environment while it generates for the others. Any
    other generator plays them in lockstep: each round, one generate call continues every unfinished episode.

    An episode that raises (while it is built, in a turn, when it is scored or released) ends errored with
    the exception's text, and the others go on; a failure of the generator itself still ends the batch.

    `env_host`: where the environments live (None: here, unbounded; `train.env_hosts`: environment servers, or
    local kernels bounded by `max_local_kernels`). A host that holds at most `most_at_once` episodes gets at most
    that many alive at once: continuously, the next starts when one ends; in lockstep, in waves of that size.

    `seed_by_instance` (evaluations; played without lockstep): a turn's seed is named by its episode's (task, scale,
    seed, sample) and turn instead of this batch and its place in it, so two models that sample the same instances
    with the same sample numbers draw the same random numbers (common random numbers: their paired difference is
    then what the models change, less the sampler's noise). GSPO's rollouts keep fresh numbers in every batch."""
    at_once = getattr(env_host, "most_at_once", None)

    def build(spec: RolloutSpec) -> TokenEpisode | _UnbuiltEpisode:
        episode = None
        try:
            episode = Episode(
                spec.task,
                spec.scale,
                spec.seed,
                harness,
                limits=limits,
                policy_name=policy_name,
                sample=spec.sample,
                error_mode=error_mode,
                session_kwargs=session_kwargs,
                tokenizer=chat.tokenizer,
                env_host=env_host,
            )
            return TokenEpisode(episode, chat)
        except Exception as exc:  # noqa: BLE001 - this episode's failure, not the batch's
            if episode is not None:
                try:
                    episode.close()
                except Exception:  # noqa: BLE001 - already errored; the first failure is the one reported
                    pass
            return _UnbuiltEpisode(spec, harness, chat, policy_name, exc)

    if getattr(generate_turns, "continuous", False) and len(specs) > 1:
        return _play_continuously(specs, build, generate_turns, harness, at_once, seed_by_instance)
    if at_once and len(specs) > at_once:
        return [
            e
            for start in range(0, len(specs), at_once)
            for e in run_token_episodes(
                specs[start : start + at_once],
                harness,
                chat,
                generate_turns,
                limits,
                policy_name=policy_name,
                error_mode=error_mode,
                session_kwargs=session_kwargs,
                env_host=env_host,
                seed_by_instance=seed_by_instance,
            )
        ]
    episodes: list[TokenEpisode | _UnbuiltEpisode] = []
    rounds = _rounds_bar(harness, limits)
    try:
        for spec in specs:
            episodes.append(build(spec))
        # an _UnbuiltEpisode is finished from the start
        while live := [e for e in episodes if isinstance(e, TokenEpisode) and not e.finished]:
            started = time.perf_counter()
            try:
                turns = generate_turns([e.context_ids() for e in live], max(e.turn_budget() for e in live))
            except PolicyError as exc:
                for playing in live:
                    playing.episode.fail(str(exc))
                break
            if len(turns) != len(live):
                raise RuntimeError(f"the turn generator returned {len(turns)} turns for {len(live)} contexts")
            share = (time.perf_counter() - started) / len(live)
            for playing, turn in zip(live, turns):
                playing.tokens.seconds_generate += share
                _play_turn(playing, turn)
            rounds.set_postfix_str(f"{len(live)}/{len(episodes)} episodes playing", refresh=False)
            rounds.update(1)
    finally:
        rounds.close()
        results = [episode.close() for episode in episodes]
    return results


def _play_turn(playing: TokenEpisode, turn: TurnOutput) -> None:
    """Hand a generated turn (cut to the episode's budget) to its episode; an episode that raises ends errored."""
    budget = playing.turn_budget()
    try:
        playing.add_turn(TurnOutput(turn.token_ids[:budget], turn.logprobs[:budget]))
    except Exception as exc:  # noqa: BLE001 - this episode's failure, not the batch's
        playing.fail(exc, "playing a turn")


def _play_continuously(
    specs: list[RolloutSpec],
    build: Callable[[RolloutSpec], "TokenEpisode | _UnbuiltEpisode"],
    generate_turns: Any,
    harness: str,
    at_once: int | None,
    seed_by_instance: bool = False,
) -> list[EpisodeTokens]:
    """Episodes without lockstep. Only the generate calls run in worker threads (one context each); building,
    stepping, scoring and closing episodes stay on this thread, one at a time, as in lockstep. Each turn's seed is
    named by (this batch's call, episode, turn), or with `seed_by_instance` by (task, scale, seed, sample, turn), so
    it does not depend on the order requests finish in. An episode's
    `seconds_generate` is its share of the wall time: each interval split among the requests in flight during it."""
    results: list[EpisodeTokens | None] = [None] * len(specs)
    waiting = list(enumerate(specs))[::-1]  # popped from the end: in order
    live: dict[int, TokenEpisode] = {}
    turns_taken: dict[int, int] = {}
    in_flight: dict[Future, int] = {}
    call = generate_turns.reserve_call()
    names = [
        (getattr(spec.task, "id", str(spec.task)), spec.scale, spec.seed, spec.sample)
        if seed_by_instance
        else (call, i)
        for i, spec in enumerate(specs)
    ]
    workers = min(len(specs), getattr(generate_turns, "concurrency", len(specs)))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="turns")
    bar = _main_rank_bar(len(specs), f"{harness} episodes", "episode")
    clock = time.perf_counter()

    def finish(index: int) -> None:
        playing = live.pop(index)
        results[index] = playing.close()
        bar.update(1)

    def request(index: int) -> None:
        """The episode's next turn: asked of the generator, or (no token left in its budget) played empty."""
        playing = live[index]
        while not playing.finished:
            budget = playing.turn_budget()
            if budget > 0:
                turn = turns_taken.get(index, 0)
                turns_taken[index] = turn + 1
                future = pool.submit(generate_turns, [playing.context_ids()], budget, seed_keys=[(*names[index], turn)])
                in_flight[future] = index
                return
            _play_turn(playing, TurnOutput([], []))  # a turn cut at once: the episode ends as turn_cut
        finish(index)

    def start_more() -> None:
        while waiting and (at_once is None or len(live) < at_once):
            index, spec = waiting.pop()
            playing = build(spec)
            if isinstance(playing, TokenEpisode):
                live[index] = playing
                request(index)
            else:  # unbuilt: errored from the start
                results[index] = playing.close()
                bar.update(1)

    try:
        start_more()
        while in_flight:
            done, _ = wait(list(in_flight), return_when=FIRST_COMPLETED)
            now = time.perf_counter()
            share = (now - clock) / len(in_flight)
            for index in in_flight.values():
                live[index].tokens.seconds_generate += share
            clock = now
            for future in done:
                index = in_flight.pop(future)
                playing = live[index]
                try:
                    [turn] = future.result()
                except PolicyError as exc:
                    playing.episode.fail(str(exc))
                    finish(index)
                    continue
                _play_turn(playing, turn)
                request(index)
            start_more()
            bar.set_postfix_str(f"{len(live)} playing", refresh=False)
    finally:
        for future in in_flight:
            future.cancel()
        pool.shutdown(wait=False, cancel_futures=True)
        for index in list(live):  # the generator failed (or the run was stopped): what is alive ends unfinished
            finish(index)
        bar.close()
    assert all(r is not None for r in results)
    return [r for r in results if r is not None]


def _rounds_bar(harness: str, limits: Limits) -> Any:
    """A bar over a lockstep batch's rounds (one turn of every live episode each)."""
    return _main_rank_bar(limits.max_turns, f"{harness} turns", "turn")


def _main_rank_bar(total: int | None, desc: str, unit: str) -> Any:
    """A bar inside a batch: a batch takes minutes on a CPU, and the bars above it (GSPO's optimizer steps, an
    evaluation's episodes) move only when it ends. On the main rank only (RANK, set by torchrun and accelerate), so
    that N ranks do not draw N bars."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=False, disable=os.environ.get("RANK", "0") != "0")


def run_token_episode(
    task: Any,
    scale: str,
    seed: int,
    harness: str,
    chat: ChatFormat,
    generate_turns: TurnGenerator,
    limits: Limits,
    **kwargs: Any,
) -> EpisodeTokens:
    """Play one episode of `task` at (scale, seed) under `harness`."""
    return run_token_episodes([RolloutSpec(task, scale, seed)], harness, chat, generate_turns, limits, **kwargs)[0]


def teacher_scripts(chat: ChatFormat, trajectories: list[Trajectory]) -> list[list[list[int]]]:
    """The tokens a model would generate, turn by turn, to reproduce each trajectory (from the whole render)."""
    return [chat.assistant_turns(t.messages, t.tools) for t in trajectories]


def rollout_summary(episodes: list[EpisodeTokens]) -> dict[str, Any]:
    """A training batch in numbers: the batch summary of its trajectories (`harness.summary.episode_summary`, the
    one definition of every mean), plus what only the token adapter knows: tokens and seconds."""
    scored = [e for e in episodes if not e.errored]
    return {
        **episode_summary([e.trajectory for e in episodes]),
        "episode_length_tokens": sum(len(e.completion_ids) for e in scored) / max(len(scored), 1),
        "generated_tokens": sum(sum(e.env_mask) for e in episodes),  # the model's tokens, errored episodes included
        "seconds_generate": sum(e.seconds_generate for e in episodes),
        "seconds_environment": sum(e.seconds_environment for e in episodes),
    }
