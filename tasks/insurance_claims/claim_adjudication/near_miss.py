"""A plausible wrong solution: decides every open claim correctly but ignores the category sub-limits."""
flip = {"apply_sublimits": False}
