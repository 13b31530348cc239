"""A plausible wrong solution: applies every rule except the HR rate corrections sitting in the inbox."""
flip = {"apply_rate_corrections": False}
