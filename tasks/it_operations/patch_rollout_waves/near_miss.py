"""A plausible wrong solution: applies the change freeze to every wave, not just production ones."""
flip = {"freeze_all_waves": True}
