"""A plausible wrong solution: right recalls, but reminders always go lead-days before the due date, even in the
past."""
flip = {"no_reminders_in_the_past": False}
