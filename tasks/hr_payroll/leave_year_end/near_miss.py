"""A plausible wrong solution: a 2026 hire accrues for their hiring month too, even when they joined mid-month."""
flip = {"count_hiring_month": True}
