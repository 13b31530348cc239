"""A plausible wrong solution: applies the rules but ignores the sponsors' prior-approval letters,
so approved charges are moved too."""
flip = {"honour_approvals": False}
