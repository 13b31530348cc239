"""A plausible wrong solution: skips weekends but forgets the public holidays when counting business days."""
flip = {"skip_holidays": False}
