"""A plausible wrong solution: treats every exception in the register as valid, ignoring its end date."""
flip = {"check_exception_end": False}
