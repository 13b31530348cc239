"""A plausible wrong solution: treats the ground closure's end date as already open again (off by one day)."""
flip = {"closure_inclusive": False}
