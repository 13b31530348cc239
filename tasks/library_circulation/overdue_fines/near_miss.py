"""A plausible wrong solution: counts the days the branch was closed as late days."""
flip = {"skip_closed_days": False}
