"""A plausible wrong solution: reads only the first VIP e-mail, so the dropped account still goes to the
duty manager and the newly added one does not."""
flip = {"follow_list_updates": False}
