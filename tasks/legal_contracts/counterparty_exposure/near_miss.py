"""A plausible wrong solution: converts currencies and rolls up groups but counts disputed invoices in full."""
flip = {"halve_disputed": False}
