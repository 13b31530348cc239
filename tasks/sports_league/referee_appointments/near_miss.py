"""A plausible wrong solution: applies every eligibility rule but breaks ties by grade and name, ignoring workload."""
flip = {"by_workload": False}
