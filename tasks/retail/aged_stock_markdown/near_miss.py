"""A plausible wrong solution: counts a line as aged when it is exactly at a band's day count (>= instead of >)."""
flip = {"strictly_older": False}
