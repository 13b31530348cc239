"""A plausible wrong solution: honours the exclusions but misses the cheque that has not been banked yet."""
flip = {"count_unbanked_cheques": False}
