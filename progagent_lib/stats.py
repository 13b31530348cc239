"""Intervals for pass rates and mean scores (no imports from the rest of the package: every layer may use them)."""
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
    is given with n = instances: the samples of one instance are not independent). (0, 1) when n is 0."""
    if not 0.0 <= rate <= 1.0 or n < 0:
        raise ValueError(f"need 0 <= rate <= 1 and n >= 0, got rate={rate}, n={n}")
    if n == 0:
        return 0.0, 1.0
    denominator = 1 + z * z / n
    centre = (rate + z * z / (2 * n)) / denominator
    half = z * math.sqrt(rate * (1 - rate) / n + z * z / (4 * n * n)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


def mean_interval(values: list[float], z: float = 1.959963984540054, low: float = 0.0,
                  high: float = 1.0) -> tuple[float, float]:
    """A normal-approximation interval of the mean of `values` (95% by default), clipped to [low, high]:
    mean +/- z * s / sqrt(n) with the sample standard deviation s. (low, high) when n < 2 (no spread to estimate)."""
    n = len(values)
    if n < 2:
        return low, high
    mean = sum(values) / n
    s = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = z * s / math.sqrt(n)
    return max(low, mean - half), min(high, mean + half)


__all__ = ["mean_interval", "wilson_interval", "wilson_rate"]
