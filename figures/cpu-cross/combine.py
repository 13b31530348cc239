"""The three parts of the cross-harness run in one file for the table and figure: part 1's rows, with its PTC rows
(6 SFT steps, an unfit model) renamed recipe "PTC (6 SFT steps)"; part 2's (PTC, 16 SFT steps) and part 3's (Hybrid,
16 SFT steps) rows as they are.

    python figures/cpu-cross/combine.py && .venv/bin/progagent train table figures/cpu-cross/learning-combined.jsonl \
        --figure figures/cpu-cross/cross_harness_learning"""
import json
run1 = [json.loads(l) for l in open("figures/cpu-cross/learning-run1.jsonl")]
run2 = [json.loads(l) for l in open("figures/cpu-cross/learning-run2.jsonl")]
run3 = [json.loads(l) for l in open("figures/cpu-cross/learning-run3.jsonl")]
out = []
for r in run1:
    if r.get("recipe") == "ptc" and r["stage"] in ("sft", "gspo"):
        r = {**r, "recipe": "PTC (6 SFT steps)"}
    out.append(r)
out += run2 + run3
with open("figures/cpu-cross/learning-combined.jsonl", "w") as f:
    f.write("".join(json.dumps(r) + "\n" for r in out))
print(len(out), "rows")
