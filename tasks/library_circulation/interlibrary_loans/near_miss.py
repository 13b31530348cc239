"""A plausible wrong solution: lends the last lendable copy of a title (ignores keep-one-on-the-shelf)."""
flip = {"keep_one_on_shelf": False}
