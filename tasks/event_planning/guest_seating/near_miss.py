"""A plausible wrong solution: seats everyone with the RSVPs as recorded, ignoring the inbox, so the
cancelled guest keeps a seat and late meal changes are lost."""
flip = {"read_inbox": False}
