"""A plausible wrong solution: breaks same-minute ties by request id instead of by student number."""
flip = {"ties_by_student_number": False}
