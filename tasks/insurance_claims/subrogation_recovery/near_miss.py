"""A plausible wrong solution: breaks ties on expected recovery by claim number instead of loss date."""
flip = {"tie_break_by_loss_date": False}
