"""Intervals for pass rates: they live on the ground floor (progagent_lib.stats), where training's rows use them too."""
from ..stats import mean_interval, wilson_interval, wilson_rate

__all__ = ["mean_interval", "wilson_interval", "wilson_rate"]
