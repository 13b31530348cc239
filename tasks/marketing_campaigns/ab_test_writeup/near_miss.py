"""A plausible wrong solution: follows the plan but reports the lift in percentage points (treatment rate minus
control rate) instead of relative to the control."""
flip = {"relative_lift": False}
