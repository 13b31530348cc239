"""A plausible wrong solution: applies the normal return window to holiday-season orders too."""
flip = {"holiday_extension": False}
