"""A plausible wrong solution: applies the salary cap only to the award named in the letter, not to
every award of that sponsor."""
flip = {"cap_every_award": False}
