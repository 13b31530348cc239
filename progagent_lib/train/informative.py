"""RL that acts, by design: GSPO learns only from groups whose rewards differ, so its prompts are chosen for that.

Before any step, the policy's pass rate is measured per candidate prompt (task, scale, seed) by sampling it at the
rollout temperature under the rollout's budgets (`probe_pass_rates`). A prompt the policy always passes or never
passes gives groups with one reward and no advantage; only prompts inside (0, 1) are trained (`choose_informative`),
and a run with none is refused before it starts, naming the rates (`NothingToLearn`), instead of skipping every step.

During training, dynamic sampling (DAPO) does the rest (`DynamicSampler`): a group whose rewards all came out equal is
dropped and replaced by a fresh group of another informative prompt, up to a budget of groups per generation batch.
What a group of n samples of a prompt with pass rate p is worth: it has both outcomes with probability
1 - p^n - (1 - p)^n (`informative_group_chance`), 0.77 for p = 1/6 and n = 8 against 0.52 for n = 4.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..stats import wilson_interval

from .common import POST_PROBE_FILE as POST_PROBE_FILE  # read here by the pipeline
from .common import PROBE_DIR, PROBE_FILE


class NothingToLearn(ValueError):
    """No candidate prompt has a sampled pass rate inside (0, 1): GSPO would skip every step."""


@dataclass(frozen=True)
class PromptRate:
    """One candidate prompt's sampled pass rate before RL."""

    task_id: str
    scale: str
    seed: int
    passed: int  # samples with R = 1
    samples: int  # samples that ended with a verdict (errored ones are left out)
    distinct_scores: int = 0  # how many different R~ the samples had (the dense reward's informativeness)

    @property
    def rate(self) -> float:
        return self.passed / self.samples if self.samples else 0.0

    @property
    def interval(self) -> tuple[float, float]:
        return wilson_interval(self.passed, self.samples)

    def informative(self, reward: str = "binary") -> bool:
        """Whether groups of this prompt can have different rewards: both outcomes seen (R), or two scores (R~)."""
        if reward == "dense":
            return self.distinct_scores > 1
        return 0 < self.passed < self.samples

    def label(self) -> str:
        return f"{self.task_id} {self.scale} seed {self.seed}: {self.passed}/{self.samples}"


def informative_group_chance(rate: float, group_size: int) -> float:
    """The chance that a group of `group_size` samples of a prompt with pass rate `rate` has both outcomes."""
    return 1.0 - rate**group_size - (1.0 - rate) ** group_size


def rates_from_trajectories(trajectories: Sequence[Any]) -> list[PromptRate]:
    """Per (task, scale, seed), in first-seen order: R = 1 samples over samples with a verdict."""
    grouped: dict[tuple[str, str, int], list[Any]] = {}
    for t in trajectories:
        grouped.setdefault((t.task_id, t.scale, int(t.seed)), []).append(t)
    rates = []
    for (task_id, scale, seed), group in grouped.items():
        judged = [t for t in group if not t.errored]
        rates.append(
            PromptRate(
                task_id,
                scale,
                seed,
                passed=sum(t.reward == 1.0 for t in judged),
                samples=len(judged),
                distinct_scores=len({round(t.score, 9) for t in judged}),
            )
        )
    return rates


def choose_informative(rates: Sequence[PromptRate], reward: str = "binary", temperature: float | None = None) -> list:
    """The prompts to train on: those inside (0, 1). None: NothingToLearn, one line naming every rate."""
    chosen = [r for r in rates if r.informative(reward)]
    if not chosen:
        at = f" at temperature {temperature:g}" if temperature is not None else ""
        measured = "; ".join(r.label() for r in rates) or "no prompt was probed"
        raise NothingToLearn(
            f"GSPO refused before its first step: no candidate prompt has a sampled pass rate inside (0, 1){at}, so "
            f"every group would have one reward and no advantage ({measured}); change the SFT stage (fewer steps if "
            "all pass, more if none does), the temperature or the candidate seeds"
        )
    return chosen


PROMPT_ORDERS = ("shuffled", "informative")


def most_informative_first(rates: Sequence[PromptRate]) -> list[PromptRate]:
    """The chosen prompts ordered by what a group of them is worth: pass rate nearest 1/2 first (both outcomes most
    likely, and room to rise), a lower rate first between two as near, then the probe's order (a stable sort)."""
    return sorted(rates, key=lambda r: (round(abs(r.rate - 0.5), 9), r.rate))


def write_rates(path: Path, rates: Sequence[PromptRate], chosen: Sequence[PromptRate], group_size: int) -> dict:
    """The probe's record (pre_rl_pass_rates.json): every rate with its interval, which were chosen, and the
    expected share of informative groups among the chosen at this group size."""
    record = {
        "group_size": group_size,
        "prompts": [{**asdict(r), "rate": r.rate, "interval": list(r.interval), "chosen": r in chosen} for r in rates],
        "chosen": len(chosen),
        "candidates": len(rates),
        "expected_informative_group_share": (
            sum(informative_group_chance(r.rate, group_size) for r in chosen) / len(chosen) if chosen else 0.0
        ),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2))
    return record


def read_rates(path: str | Path) -> list[PromptRate]:
    """The chosen prompts of a probe record (a resumed run trains on the same prompts)."""
    record = json.loads(Path(path).read_text())
    fields = ("task_id", "scale", "seed", "passed", "samples", "distinct_scores")
    return [PromptRate(**{k: p[k] for k in fields}) for p in record["prompts"] if p["chosen"]]


def prompt_of(prompt: Any) -> tuple[str, str, int]:
    """(task id, scale, seed) of a PromptRate or a Trajectory."""
    return (prompt.task_id, prompt.scale, int(prompt.seed))


def group_is_flat(group: Sequence[Any], reward: str = "binary") -> bool:
    """Whether a group's judged episodes all have one reward (R, or R~ when dense): no advantage anywhere."""
    value = (lambda e: e.reward) if reward == "binary" else (lambda e: round(e.score, 9))
    return len({value(e) for e in group if not e.errored}) <= 1


class DynamicSampler:
    """DAPO's dynamic sampling over a pool of prompts: flat groups are replaced by fresh groups, up to a budget.

    `refill(episodes, play)` takes a generation batch (consecutive groups of `group_size`) and `play(prompts)`, which
    plays `group_size` episodes of each prompt and returns them in order. Flat groups are replaced, all of one round
    in one `play` call, by groups of the pool's next prompts (a seeded shuffle, reshuffled when used up; or the pool's
    own order) until none
    is flat or `budget` groups have been played. Groups still flat stay in the batch (their steps have no advantage)
    and are counted in `stats`.
    """

    def __init__(
        self,
        pool: Sequence[Any],
        group_size: int,
        budget: int,
        reward: str = "binary",
        seed: int = 0,
        shuffle: bool = True,
    ):
        """`shuffle` False: the pool is drawn in its own order (most_informative_first's), from the start again when
        used up."""
        if not pool:
            raise ValueError("dynamic sampling needs at least one prompt to refill from")
        self.pool, self.group_size, self.budget, self.reward = list(pool), group_size, budget, reward
        self.rng = random.Random(seed) if shuffle else None
        self.order: list[Any] = []

    def next_prompts(self, n: int, avoid: Collection[tuple] = ()) -> list[Any]:
        """The next `n` prompts of the shuffled pool, passing over those in `avoid` (the batch's, by `prompt_of`) and
        those drawn in this call while the rest of the shuffle has others: a refill widens the batch's prompts
        instead of playing one again."""
        drawn: list[Any] = []
        while len(drawn) < n:
            if not self.order:
                self.order = list(self.pool)
                if self.rng is not None:
                    self.rng.shuffle(self.order)
                else:
                    self.order.reverse()  # drawn from the end: the pool's first prompt first
            taken = set(avoid) | {prompt_of(p) for p in drawn}
            last = len(self.order) - 1
            drawn.append(
                self.order.pop(next((i for i in range(last, -1, -1) if prompt_of(self.order[i]) not in taken), last))
            )
        return drawn

    def refill(self, episodes: list[Any], play: Callable[[list[Any]], list[Any]]) -> tuple[list[Any], dict]:
        n = self.group_size
        groups = [episodes[i : i + n] for i in range(0, len(episodes), n)]
        played = 0
        first_flat = sum(group_is_flat(g, self.reward) for g in groups)
        while True:
            flat = [i for i, g in enumerate(groups) if group_is_flat(g, self.reward)]
            take = flat[: max(self.budget - played, 0)]
            if not take:
                break
            fresh = play(self.next_prompts(len(take), avoid={prompt_of(g[0].trajectory) for g in groups if g}))
            for slot, start in zip(take, range(0, len(fresh), n)):
                groups[slot] = fresh[start : start + n]
            played += len(take)
        still_flat = sum(group_is_flat(g, self.reward) for g in groups)
        stats = {
            "groups": len(groups),
            "flat_groups_sampled": first_flat,
            "refill_groups": played,
            "informative_groups": len(groups) - still_flat,
            "informative_group_share": (len(groups) - still_flat) / len(groups) if groups else 0.0,
        }
        return [e for g in groups for e in g], stats


def candidate_prompts(tasks: Sequence[Any], scales: Sequence[str], seeds: Sequence[int]) -> list[tuple[Any, str, int]]:
    """(task, scale, seed) for every training prompt, in the dataset's order."""
    return [(task, scale, seed) for seed in seeds for task in tasks for scale in scales]


def rollout_sampling(
    config: Any,
    instances: Sequence[Sequence],
    samples: int,
    stage: str,
    output_dir: str | Path,
    first_sample: int = 0,
):
    """An evaluation that samples `instances` as a GSPORunConfig's rollouts are sampled: its policy and chat
    template, harness, temperature, budgets, error mode, environment hosts, generator and seed. The pre-RL probe, the
    paired probe before and after RL and the RFT control's samples all use it, so each is drawn as GSPO draws.
    Samples are numbered from `first_sample`: the same numbers draw the same random numbers (`EvalConfig`)."""
    from .evaluate import EvalConfig

    return EvalConfig(
        model=config.model,
        stage=stage,
        chat_template=config.chat_template,
        output_dir=str(output_dir),
        tasks_root=config.tasks_root,
        harnesses=[config.harness],
        instances=[list(instance) for instance in instances],
        samples=samples,
        first_sample=first_sample,
        batch_size=config.sampling_batch_size,
        temperature=config.temperature,
        max_turns=config.max_turns,
        max_new_tokens=config.max_new_tokens,
        max_context_tokens=config.max_context_tokens,
        max_observation_chars=config.max_observation_chars,
        max_tool_calls=config.max_tool_calls,
        env_servers=config.env_servers,
        env_server_token_file=config.env_server_token_file,
        max_local_kernels=config.max_local_kernels,
        error_mode=config.error_mode,
        engine_url=config.engine_url,
        engine_model=config.engine_model,
        vllm_server_base_url=config.vllm_server_base_url if config.use_vllm else None,
        seed=config.seed,
    )


def probe_pass_rates(config: Any, tasks: Sequence[Any], prompts: Sequence[PromptRate] | None = None) -> list:
    """Sample each candidate prompt of a GSPORunConfig (or `prompts`) `probe_samples` times as its rollouts are
    sampled (`rollout_sampling`), through the evaluation path (`<output_dir>/probe/`)."""
    return rates_from_trajectories(probe_trajectories(config, tasks, prompts))


def probe_trajectories(
    config: Any, tasks: Sequence[Any], prompts: Sequence[PromptRate] | None = None, first_sample: int = 0
) -> list:
    """The episodes of `probe_pass_rates`, samples numbered from `first_sample`."""
    from .evaluate import evaluate

    trajectories, _ = evaluate(probe_sampling(config, tasks, prompts, first_sample))
    return trajectories


def probe_sampling(
    config: Any, tasks: Sequence[Any], prompts: Sequence[PromptRate] | None = None, first_sample: int = 0
) -> Any:
    """The evaluation `probe_trajectories` plays (an EvalConfig): `prompts` (default: every candidate) sampled
    `probe_samples` times each as GSPO samples, into the run's probe folder."""
    by_id = {task.id: task for task in tasks}
    chosen = (
        [(by_id[p.task_id], p.scale, p.seed) for p in prompts]
        if prompts is not None
        else candidate_prompts(tasks, config.scales, config.train_seeds)
    )
    instances = [(task.id, scale, seed) for task, scale, seed in chosen]
    return rollout_sampling(
        config, instances, config.probe_samples, "pre-rl-probe", Path(config.output_dir) / PROBE_DIR, first_sample
    )


def training_prompts(config: Any, tasks: Sequence[Any], resuming: bool) -> list[PromptRate]:
    """The prompts GSPO trains on and refills from. With probe_samples: the informative ones (pre_rl_pass_rates.json
    records every rate; a resumed run reads its choice back), NothingToLearn if none; in the probe's order, or
    most_informative_first's (prompt_order: informative). Without: every candidate."""
    path = Path(config.output_dir) / PROBE_FILE
    if not config.probe_samples:
        return [
            PromptRate(t.id, scale, seed, 0, 0)
            for t, scale, seed in candidate_prompts(tasks, config.scales, config.train_seeds)
        ]
    ordered = most_informative_first if config.prompt_order == "informative" else list
    if resuming and path.exists():
        return ordered(read_rates(path))
    rates = probe_pass_rates(config, tasks)
    try:
        chosen = choose_informative(rates, config.reward, config.temperature)
    except NothingToLearn:
        write_rates(path, rates, [], config.num_generations)
        raise
    write_rates(path, rates, chosen, config.num_generations)
    return ordered(chosen)
