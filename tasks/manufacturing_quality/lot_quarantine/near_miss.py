"""A plausible wrong solution: checks defect rates first, so batches hit by both causes land under the wrong hold."""
flip = {"supplier_first": False}
