"""A plausible wrong solution: applies the allergen swap and allowance but misses the dish coming off the menu."""
flip = {"retire_dish": False}
