"""A plausible wrong solution: plans well but lets the dedicated-transport customer share trucks."""
flip = {"dedicated_alone": False}
