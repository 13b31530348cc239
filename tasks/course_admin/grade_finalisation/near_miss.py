"""A plausible wrong solution: counts days late by calendar date instead of started 24-hour periods."""
flip = {"started_periods": False}
