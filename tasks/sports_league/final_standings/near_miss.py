"""A plausible wrong solution: applies the rulings but ranks level clubs by goal difference only."""
flip = {"head_to_head": False}
