"""A plausible wrong solution: never checks the corporate card feed, so company-paid hotel bills are reimbursed twice."""
flip = {"check_card": False}
