"""A plausible wrong solution: applies the rules but ignores the ops inbox's news (no tank upgrade, no night-shift
roster), though it does block the stolen card."""
flip = {"read_ops_news": False}
