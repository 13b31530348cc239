"""A plausible wrong solution: records the staff meals but takes the delivery and waste records at face value."""
flip = {"check_records": False}
