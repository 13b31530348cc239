"""A plausible wrong solution: follows the policy but books the driver flights too (skims the notes for airlines only)."""
flip = {"read_driver_notes": False}
