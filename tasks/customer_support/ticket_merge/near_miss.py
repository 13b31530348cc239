"""A plausible wrong solution: chains the time window from the previous ticket instead of from the primary."""
flip = {"window_from_primary": False}
