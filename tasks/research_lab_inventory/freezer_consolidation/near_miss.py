"""A plausible wrong solution: fills freezers up to their full capacity, ignoring the fill limit (headroom) asked for."""
flip = {"fill_limit": False}
