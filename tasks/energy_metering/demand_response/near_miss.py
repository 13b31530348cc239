"""A plausible wrong solution: applies the rules but goes by the meter type on record, missing the exchange."""
flip = {"trust_meter_log": False}
