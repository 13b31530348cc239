"""A plausible wrong solution: decides requests first come, first served, ignoring the funding priority."""
flip = {"by_funding": False}
