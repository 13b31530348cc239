"""A plausible wrong solution: scores correctly but breaks score ties by claim number instead of the amount claimed."""
flip = {"tie_break_by_amount": False}
