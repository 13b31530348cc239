"""Intervals for pass rates."""
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
    p = passed / total
    denominator = 1 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return max(0.0, centre - half), min(1.0, centre + half)


__all__ = ["wilson_interval"]
