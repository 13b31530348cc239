"""A plausible wrong solution: breaks ROI ties by campaign id instead of conversions, so the wrong campaign of the
tied pair is cut."""
flip = {"conversions_break_ties": False}
