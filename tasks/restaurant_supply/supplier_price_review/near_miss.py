"""A plausible wrong solution: compares per-unit prices but forgets that expired quotes no longer count."""
flip = {"honour_expiry": False}
