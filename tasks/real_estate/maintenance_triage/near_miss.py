"""A plausible wrong solution: treats every report of no heating as an emergency, never checking the forecast."""
flip = {"read_forecast": False}
