"""A plausible wrong solution: checks institutions, co-investigators and declared conflicts but treats
every co-authorship as a conflict regardless of how old it is, and forgets the round's workload cap."""
flip = {"coauthor_window": False, "round_cap": False}
