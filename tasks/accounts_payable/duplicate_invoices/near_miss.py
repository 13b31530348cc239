"""A plausible wrong solution: compares invoice numbers literally, so re-keyed numbers slip through."""
flip = {"normalise_numbers": False}
