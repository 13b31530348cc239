"""A plausible wrong solution: applies the depot hand-back to recalls as well, so recalls for
vehicles at that depot are never raised."""
flip = {"recalls_at_handback": False}
