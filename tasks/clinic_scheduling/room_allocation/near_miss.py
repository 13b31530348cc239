"""A plausible wrong solution: trusts the room list for equipment, missing that the portable ultrasound moved."""
flip = {"follow_equipment_moves": False}
