"""A plausible wrong solution: looks only at the normal company thresholds and forgets the winter
minimum at the winter depot (it still prices winter tyres there)."""
flip = {"winter_minimum": False}
