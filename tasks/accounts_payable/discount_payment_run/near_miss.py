"""A plausible wrong solution: ignores the rule that weekend deadlines move to the following Monday."""
flip = {"roll_weekends": False}
