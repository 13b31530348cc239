"""Intervals for pass rates: they live on the ground floor (progagent_lib.stats), where training's rows use them too."""

from ..stats import wilson_interval, wilson_rate

__all__ = ["wilson_interval", "wilson_rate"]
