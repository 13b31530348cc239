"""A plausible wrong solution: takes the latest calibration whatever its result, so a recent failed calibration
hides an overdue instrument."""
flip = {"skip_failed": False}
