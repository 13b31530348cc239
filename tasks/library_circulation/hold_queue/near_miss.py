"""A plausible wrong solution: forgets the renewal drive and fills the holds of cards about to expire."""
flip = {"renewal_drive": False}
