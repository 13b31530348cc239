"""A plausible wrong solution: reads the memo and exceptions but ignores signed amendments."""
flip = {"apply_amendments": False}
