"""A plausible wrong solution: applies the flat cleaning fee to every lease, ignoring when the clause began."""
flip = {"fee_from_clause_date": False}
