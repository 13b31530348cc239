"""A plausible wrong solution: ignores the calibration notice, so the invalid readings raise a false signal."""
flip = {"skip_invalid_readings": False}
