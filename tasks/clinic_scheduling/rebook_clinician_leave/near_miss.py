"""A plausible wrong solution: rebooks and notifies correctly but never reads the front-desk preference notes."""
flip = {"use_preferences": False}
