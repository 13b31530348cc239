"""A plausible wrong solution: on equal quotes it keeps the first carrier listed instead of the more punctual one."""
flip = {"punctual_on_ties": False}
