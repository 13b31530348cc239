"""A plausible wrong solution: applies the playbook but misses the governing-law and size exemptions."""
flip = {"apply_exemptions": False}
