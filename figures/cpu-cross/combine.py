"""Both parts of the cross-harness run in one file for the table and figure: part 1's rows, with its PTC rows (6 SFT
steps, an unfit model) renamed recipe "PTC (6 SFT steps)"; part 2's rows as they are."""
import json, sys
run1 = [json.loads(l) for l in open("figures/cpu-cross/learning-run1.jsonl")]
run2 = [json.loads(l) for l in open("figures/cpu-cross/learning-run2.jsonl")]
out = []
for r in run1:
    if r.get("recipe") == "ptc" and r["stage"] in ("sft", "gspo"):
        r = {**r, "recipe": "PTC (6 SFT steps)"}
    if r.get("recipe") == "ptc" and r["stage"] in ("base", "memorize"):
        pass
    out.append(r)
out += run2
with open("figures/cpu-cross/learning-combined.jsonl", "w") as f:
    f.write("".join(json.dumps(r) + "\n" for r in out))
print(len(out), "rows")
