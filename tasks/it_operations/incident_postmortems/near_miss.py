"""A plausible wrong solution: uses the first resolution of a reopened incident instead of the last."""
flip = {"last_resolution": False}
