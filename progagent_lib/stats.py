"""Intervals for pass rates and mean scores in [0, 1] (no imports from the rest of the package: every layer may use them)."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass


def wilson_interval(passed: int, total: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """The Wilson score interval of a proportion `passed / total` (95% by default); (0, 1) when total is 0.

    Unlike the normal approximation it stays inside [0, 1] and is not degenerate at 0/n or n/n:
    4 of 4 gives (0.51, 1.00), 0 of 4 gives (0.00, 0.49).
    """
    if total < 0 or passed < 0 or passed > total:
        raise ValueError(f"need 0 <= passed <= total, got passed={passed}, total={total}")
    if total == 0:
        return 0.0, 1.0
    return wilson_rate(passed / total, total, z)


def wilson_rate(rate: float, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    """Wilson's interval for an observed rate over n independent units (a rate pooled from k samples per instance
    is given with n = instances: the samples of one instance are not independent). (0, 1) when n is 0.

    Also used for the mean of a score in [0, 1] over n instances (mean R~): among variables in [0, 1] with mean p the
    Bernoulli has the largest variance, p(1 - p), so the interval is conservative, and unlike a normal interval it
    does not shrink to a point when every instance scores the same."""
    if not 0.0 <= rate <= 1.0 or n < 0:
        raise ValueError(f"need 0 <= rate <= 1 and n >= 0, got rate={rate}, n={n}")
    if n == 0:
        return 0.0, 1.0
    denominator = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / denominator
    # at 0/n and n/n the bound is exactly 0 or 1 (centre - half cancels to rounding error, e.g. 2.8e-17)
    return (0.0 if rate == 0.0 else max(0.0, centre - half)), (1.0 if rate == 1.0 else min(1.0, centre + half))


@dataclass(frozen=True)
class PairedDifference:
    """B minus A on the same units (instances, or prompts), with a paired bootstrap interval; for 0/1 outcomes also
    McNemar's exact test on the discordant units."""

    units: int
    a_mean: float  # A's mean over the units
    b_mean: float  # B's mean
    difference: float  # b - a
    low: float  # the 95% paired bootstrap interval of the difference
    high: float
    b_only: int  # units B passes and A fails (0/1 outcomes; else units where B is higher)
    a_only: int  # units A passes and B fails
    p_value: float | None  # McNemar's exact two-sided p (None unless every outcome is 0 or 1)

    def text(self) -> str:
        p = f", McNemar p = {self.p_value:.3g}" if self.p_value is not None else ""
        return (
            f"{self.difference:+.3f} [{self.low:+.3f}, {self.high:+.3f}] over {self.units} "
            f"({self.b_only} only B, {self.a_only} only A{p})"
        )


def paired_difference(
    a: Sequence[float], b: Sequence[float], resamples: int = 10_000, seed: int = 0
) -> PairedDifference:
    """B - A where a[i] and b[i] are the same unit's outcome (pass 0/1, or a rate) under A and under B.

    The interval resamples units with replacement (percentile, 95%), so it respects the pairing: a unit both pass
    or both fail moves neither. Seeded: the same inputs give the same interval."""
    if len(a) != len(b):
        raise ValueError(f"paired outcomes need one A and one B per unit, got {len(a)} and {len(b)}")
    n = len(a)
    if n == 0:
        return PairedDifference(0, 0.0, 0.0, 0.0, -1.0, 1.0, 0, 0, None)
    deltas = [y - x for x, y in zip(a, b)]
    rng = random.Random(seed)
    means = sorted(sum(deltas[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    low, high = means[int(0.025 * (resamples - 1))], means[int(0.975 * (resamples - 1))]
    b_only, a_only = sum(d > 0 for d in deltas), sum(d < 0 for d in deltas)
    binary = all(v in (0, 1) for v in (*a, *b))
    return PairedDifference(
        n,
        sum(a) / n,
        sum(b) / n,
        sum(deltas) / n,
        low,
        high,
        b_only,
        a_only,
        mcnemar_exact(b_only, a_only) if binary else None,
    )


def mcnemar_exact(b_only: int, a_only: int) -> float:
    """McNemar's exact two-sided p-value: the discordant units split as a fair coin would (1.0 with none)."""
    discordant = b_only + a_only
    tail = sum(math.comb(discordant, k) for k in range(min(b_only, a_only) + 1)) / 2**discordant
    return min(1.0, 2 * tail)


__all__ = ["PairedDifference", "mcnemar_exact", "paired_difference", "wilson_interval", "wilson_rate"]
