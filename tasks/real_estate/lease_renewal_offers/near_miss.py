"""A plausible wrong solution: applies the district cap everywhere, missing the ordinance's exemption for newer buildings."""
flip = {"new_buildings_exempt": False}
