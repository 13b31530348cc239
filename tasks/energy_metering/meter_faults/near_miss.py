"""A plausible wrong solution: finds the faults but books visits counting calendar days, not working days."""
flip = {"working_days": False}
