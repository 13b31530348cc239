"""A plausible wrong solution: applies the batch's general price tolerance to every vendor, missing procurement's note."""
flip = {"framework_terms": False}
