"""A plausible wrong solution: ranks ties densely (1, 2, 2, 3) instead of skipping ranks after a tie."""
flip = {"shared_ranks": False}
