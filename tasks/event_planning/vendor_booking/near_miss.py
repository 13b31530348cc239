"""A plausible wrong solution: ignores the client's later budget e-mail and breaks rating ties by
quote id instead of price; otherwise follows the memo."""
flip = {"budget_raise": False, "cheaper_wins_ties": False}
