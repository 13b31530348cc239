"""A plausible wrong solution: follows expiry dates and streams but skips the peroxide-former rules."""
flip = {"peroxide_rules": False}
