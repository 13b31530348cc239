"""A plausible wrong solution: approves what the customer asked for without subtracting refunds already issued."""
flip = {"cap_at_what_is_left": False}
