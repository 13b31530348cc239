"""A plausible wrong solution: handles prices and waivers but bills only the account's current meter."""
flip = {"bill_replaced_meter": False}
