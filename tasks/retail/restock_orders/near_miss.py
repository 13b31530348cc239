"""A plausible wrong solution: follows the policy but misses the supplier hold in the inbox."""
flip = {"honour_hold": False}
