"""Intervals for pass rates and mean scores in [0, 1] (no imports from the rest of the package: every layer may use them)."""

from __future__ import annotations

import math


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


__all__ = ["wilson_interval", "wilson_rate"]
