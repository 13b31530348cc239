"""A plausible wrong solution: treats every declaration as covering the whole year and ignores cancellations."""
flip = {"read_declarations": False}
