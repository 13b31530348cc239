"""A plausible wrong solution: never checks whether the donor is a retiree."""
flip = {"check_retirees": False}
