"""A plausible wrong solution: follows the procedure and estates notices but overlooks the ground-floor request."""
flip = {"honour_access_request": False}
