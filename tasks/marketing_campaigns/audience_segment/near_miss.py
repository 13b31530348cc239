"""A plausible wrong solution: compares opt-out addresses case-sensitively (so opted-out people who wrote their
address in capitals are still mailed) and treats the window as exclusive of its first day."""
flip = {"fold_case": False, "window_inclusive": False}
