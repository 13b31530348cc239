"""A plausible wrong solution: honours refund requests in the notes but misses the customer's arrival deadline."""
flip = {"read_deadlines": False}
