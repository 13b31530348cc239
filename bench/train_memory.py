"""Training memory and speed against the episode's length: transformers' plain loss vs our SFT and GSPO steps.

    .venv/bin/python bench/train_memory.py [--lengths 2048,4096,8192,16384] [--precisions fp32,bf16]
                                           [--checkpointing on|off|on,off] [--chunk none|N|none,N] [--repeats 2]
                                           [--fp32-max-length N]
                                           [--model smollm2] [--out runs/bench/train_memory-<time>.json]
                                           [--figure train_memory]

For each episode length, precision (fp32; bf16 = CPU autocast, fp32 weights and AdamW state) and checkpointing
setting, three kinds of one training step (forward, backward, AdamW step) on the same model:

- baseline: transformers alone, `model(input_ids, labels=input_ids)` (sdpa attention; its loss builds the whole
  tokens x vocabulary logits, upcast to fp32), backward, `torch.optim.AdamW`; checkpointing as the other two, so the
  ratios isolate the loss's LM head.
- sft: run_sft's trainer: `SFTTrainer(args=sft_args(SFTRunConfig(...)))` trained under `lm_head_tile(logit_chunk_tokens)`
  on one synthetic episode per step (the fused LM head: SFT's loss without the full logits; on a CPU our
  `TiledLogProbs`, over the trained positions only).
- gspo: run_gspo's trainer: `GSPOTrainer(args=grpo_args(GSPORunConfig(...)))` under `lm_head_tile`, fed by a rollout
  function that returns synthetic episodes instead of playing them. One optimizer step is a group of two episodes
  (the smallest GSPO learns from), trained on once (one minibatch, one pass): each episode's forward and backward
  through GSPOTrainer's loss, then AdamW; the old log-probs, the sampler comparison and the TIS weights come from the
  loss's own forward pass. `--gspo-minibatches 2` splits the group into two optimizer steps of one episode: then the
  second episode's old log-probs must be taken before the first step, and TRL computes every episode's in a forward
  pass of its own after generation (the configs that split a batch: cpu-smoke, cpu-study, cpu-cross). Its tokens/s
  counts both episodes.

Token ids are random (the content changes neither time nor memory); an SFT episode trains on alternating 256-token
spans, a GSPO episode's completion alternates model and observation spans, the first eighth of each is its prompt.
Past the model's positions (SmolLM2: 8,192) RoPE is extrapolated: the numbers hold, the model's outputs would not.

Each measurement runs in a process of its own, so its peak memory is one configuration's: `peak_gb` is the process's
largest resident set during the steps (VmHWM, reset after the model is loaded and the trainer built; without
/proc/self/clear_refs it falls back to the process's whole life, `process_peak_gb`, from wait4's ru_maxrss);
`resident_gb` is what was resident before the first step (weights, trainer). `seconds` is the fastest of `--repeats`
steps (the first pays one-off costs: AdamW's state, kernel set-up). A measurement killed (for memory, or by
--timeout) is kept as a row that says so. The table and the JSON file (runs/bench/) give, per row, its peak and
speed over the baseline's of the same length, precision and checkpointing, and bf16's over fp32's.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import nullcontext
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

RESULT_MARK = "TRAIN_MEMORY_RESULT "
KINDS = ("baseline", "sft", "gspo", "gspo-split")   # gspo-split: the group in two minibatches (two optimizer steps)
SPAN = 256   # tokens per trained / untrained span of a synthetic episode
MEASURED = ("seconds", "step_seconds", "tokens_per_step", "tokens_per_second", "peak_gb", "resident_gb", "peak_reset",
            "attention", "threads")   # what `measure` reports (None in a row whose process failed)


# --- inside the measuring process -------------------------------------------------------------------------------
def _status_gb(key: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 2**20   # kB -> GB
    raise KeyError(key)


class PeakProbe:
    """Resident memory before the steps, the peak during them, and each step's seconds."""

    def __init__(self) -> None:
        self.resident_gb = self.peak_reset = None
        self.seconds: list[float] = []
        self._started = 0.0

    def start(self) -> None:
        self.resident_gb = _status_gb("VmRSS")
        try:   # "5" resets VmHWM to the current resident set (Linux >= 4.0)
            Path("/proc/self/clear_refs").write_text("5")
            self.peak_reset = True
        except OSError:
            self.peak_reset = False

    def step_begin(self) -> None:
        self._started = time.perf_counter()

    def step_end(self) -> None:
        self.seconds.append(time.perf_counter() - self._started)

    def peak_gb(self) -> float:
        return _status_gb("VmHWM")


def _probe_callback(probe: PeakProbe):
    from transformers import TrainerCallback

    class Probe(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):   # after checkpointing is set and the model prepared
            probe.start()

        def on_step_begin(self, args, state, control, **kwargs):
            probe.step_begin()

        def on_step_end(self, args, state, control, **kwargs):
            probe.step_end()

    return Probe()


def _spans(length: int, start: int) -> list[int]:
    """0 before `start`, then alternating SPAN-token spans of 1 and 0."""
    return [0 if i < start else int((i - start) // SPAN % 2 == 0) for i in range(length)]


def _baseline(model, ids, spec: dict, probe: PeakProbe) -> None:
    import torch

    if spec["checkpointing"]:
        model.activation_checkpointing_enable()   # what Trainer.train does with activation_checkpointing
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-6)
    autocast = torch.autocast("cpu", dtype=torch.bfloat16) if spec["precision"] == "bf16" else nullcontext()
    input_ids = ids[None]
    probe.start()
    for _ in range(spec["repeats"]):
        probe.step_begin()
        with autocast:
            loss = model(input_ids=input_ids, labels=input_ids, use_cache=False).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        probe.step_end()


def _sft(model, tokenizer, ids, spec: dict, probe: PeakProbe, work: Path) -> None:
    from datasets import Dataset
    from trl import SFTTrainer

    from progagent_lib.train.logits import lm_head_tile
    from progagent_lib.train.sft import SFTRunConfig, sft_args

    config = SFTRunConfig(output_dir=str(work), max_length=None, max_steps=spec["repeats"], learning_rate=1e-6,
                          bf16=spec["precision"] == "bf16", gradient_checkpointing=spec["checkpointing"],
                          logit_chunk_tokens=spec["chunk"])
    length = len(ids)
    row = {"input_ids": ids.tolist(), "assistant_masks": _spans(length, length // 8)}
    trainer = SFTTrainer(model=model, args=sft_args(config), train_dataset=Dataset.from_list([row] * spec["repeats"]),
                         processing_class=tokenizer, callbacks=[_probe_callback(probe)])
    with lm_head_tile(config.logit_chunk_tokens):   # as run_sft
        trainer.train()


def _gspo(model, tokenizer, spec: dict, probe: PeakProbe, work: Path) -> None:
    import torch
    from datasets import Dataset

    from progagent_lib.train.gspo import GSPORunConfig, grpo_args, verifier_reward
    from progagent_lib.train.gspo_trainer import GSPOTrainer
    from progagent_lib.train.logits import lm_head_tile

    length, vocab = spec["length"], model.config.vocab_size
    prompt = length // 8
    generator = torch.Generator().manual_seed(spec["seed"] + 1)
    minibatches = 2 if spec["kind"] == "gspo-split" else 1
    config = GSPORunConfig(output_dir=str(work), num_generations=2, prompts_per_step=1, minibatches=minibatches,
                           num_iterations=1, micro_batch_size=1, max_steps=spec["repeats"] * minibatches,
                           save_steps=10**9,
                           max_turns=None, max_new_tokens=None, max_context_tokens=length, learning_rate=1e-6,
                           bf16=spec["precision"] == "bf16", gradient_checkpointing=spec["checkpointing"],
                           logit_chunk_tokens=spec["chunk"])

    def rollout_func(prompts, trainer):
        """Synthetic episodes in the shape make_rollout_func returns: rewards 0, 1, ... so every group learns."""
        episodes = [torch.randint(0, vocab, (length,), generator=generator).tolist() for _ in prompts]
        model_tokens = _spans(length - prompt, 0)
        return {"prompt_ids": [e[:prompt] for e in episodes], "completion_ids": [e[prompt:] for e in episodes],
                "logprobs": [[-1.0] * (length - prompt) for _ in episodes], "env_mask": [model_tokens] * len(episodes),
                "verifier_reward": [float(i % 2) for i in range(len(episodes))]}

    dataset = Dataset.from_list([{"prompt": [{"role": "user", "content": "x"}]}] * spec["repeats"])
    trainer = GSPOTrainer(model=model, processing_class=tokenizer, reward_funcs=[verifier_reward], args=grpo_args(config),
                          train_dataset=dataset, rollout_func=rollout_func, callbacks=[_probe_callback(probe)],
                          importance_sampling_cap=config.importance_sampling_cap)
    with lm_head_tile(config.logit_chunk_tokens):   # as run_gspo
        trainer.train()


def measure(spec: dict) -> dict:
    """One kind of step at one length and setting, in this process (started by `run_child`)."""
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    import torch

    from progagent_lib.generation.sources import load_model

    torch.manual_seed(spec["seed"])
    model, tokenizer = load_model(spec["model"])
    ids = torch.randint(0, model.config.vocab_size, (spec["length"],), generator=torch.Generator().manual_seed(spec["seed"]))
    probe = PeakProbe()
    work = Path(tempfile.mkdtemp(prefix="bench-train-memory-"))
    try:
        if spec["kind"] == "baseline":
            _baseline(model, ids, spec, probe)
        elif spec["kind"] == "sft":
            _sft(model, tokenizer, ids, spec, probe, work)
        else:
            _gspo(model, tokenizer, spec, probe, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    per_batch = 2 if spec["kind"] == "gspo-split" else 1   # optimizer steps per measured unit
    if len(probe.seconds) != spec["repeats"] * per_batch:
        raise RuntimeError(f"{len(probe.seconds)} steps timed, {spec['repeats'] * per_batch} asked")
    # a GSPO unit trains a group of two episodes: one step, or (split) two steps whose first also takes both
    # episodes' old log-probs; timed together
    units = [sum(probe.seconds[i:i + per_batch]) for i in range(0, len(probe.seconds), per_batch)]
    tokens = spec["length"] * (2 if spec["kind"].startswith("gspo") else 1)
    seconds = min(units)
    return {"seconds": seconds, "step_seconds": probe.seconds, "tokens_per_step": tokens,
            "tokens_per_second": tokens / seconds, "peak_gb": probe.peak_gb(), "resident_gb": probe.resident_gb,
            "peak_reset": probe.peak_reset, "attention": model.config._attn_implementation,
            "threads": torch.get_num_threads()}


# --- the driver ---------------------------------------------------------------------------------------------------
def run_child(spec: dict, timeout: float) -> dict:
    """`measure(spec)` in a new process; its own peak from wait4 (ru_maxrss), what it reported, or why it failed."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.monotonic()
        process = subprocess.Popen([sys.executable, __file__, "--measure", json.dumps(spec)], cwd=REPO, stdout=out,
                                   stderr=err, text=True)
        timed_out = False
        while True:
            pid, status, usage = os.wait4(process.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - started > timeout:
                process.kill()
                timed_out = True
                pid, status, usage = os.wait4(process.pid, 0)
                break
            time.sleep(0.2)
        process.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    row = {**spec, **dict.fromkeys(MEASURED), "process_peak_gb": usage.ru_maxrss / 2**20,
           "wall_seconds": time.monotonic() - started}
    lines = [line for line in stdout.splitlines() if line.startswith(RESULT_MARK)]
    if process.returncode == 0 and lines:
        return {**row, **json.loads(lines[-1][len(RESULT_MARK):]), "status": "ok"}
    if timed_out:
        status_text = f"timed out after {timeout:.0f} s"
    elif process.returncode == -9:
        status_text = "killed (SIGKILL: out of memory?)"
    else:
        status_text = f"failed (exit {process.returncode}): {(stderr.strip().splitlines() or [''])[-1][:200]}"
    print(f"  {spec['kind']} at {spec['length']} tokens: {status_text}", file=sys.stderr)
    if process.returncode not in (0, -9) and not timed_out:
        print(stderr[-3000:], file=sys.stderr)
    return {**row, "status": status_text}


def with_ratios(rows: list[dict]):
    """The rows as a table, with each row's peak and speed over its baseline's and bf16's over fp32's."""
    import polars as pl

    frame = pl.DataFrame(rows, infer_schema_length=None).with_columns(
        pl.col("chunk").cast(pl.Int64), *(pl.col(name).cast(pl.Float64) for name in
                                          ("seconds", "tokens_per_second", "peak_gb", "resident_gb")))
    keys = ["length", "precision", "checkpointing"]
    baseline = frame.filter(pl.col("kind") == "baseline").select(
        *keys, pl.col("peak_gb").alias("_base_peak"), pl.col("tokens_per_second").alias("_base_speed"))
    frame = frame.join(baseline, on=keys, how="left").with_columns(
        (pl.col("peak_gb") / pl.col("_base_peak")).alias("peak_vs_baseline"),
        (pl.col("tokens_per_second") / pl.col("_base_speed")).alias("speed_vs_baseline"))
    same = ["length", "kind", "checkpointing", "chunk"]
    fp32 = frame.filter(pl.col("precision") == "fp32").select(
        *same, pl.col("peak_gb").alias("_fp32_peak"), pl.col("tokens_per_second").alias("_fp32_speed"))
    frame = frame.join(fp32, on=same, how="left", nulls_equal=True).with_columns(
        pl.when(pl.col("precision") == "bf16").then(pl.col("peak_gb") / pl.col("_fp32_peak")).alias("peak_bf16_vs_fp32"),
        pl.when(pl.col("precision") == "bf16").then(pl.col("tokens_per_second") / pl.col("_fp32_speed"))
        .alias("speed_bf16_vs_fp32"))
    return frame.drop("_base_peak", "_base_speed", "_fp32_peak", "_fp32_speed").sort(
        ["checkpointing", "length", "precision", "kind", "chunk"], descending=[True, False, False, False, False],
        nulls_last=False)


def figure(frame):
    import altair as alt
    import polars as pl

    data = frame.filter(pl.col("status") == "ok").with_columns(
        (pl.col("kind") + pl.when(pl.col("chunk").is_null()).then(pl.lit("")).otherwise(
            pl.lit(" tile ") + pl.col("chunk").cast(pl.Utf8)) + pl.when(pl.col("checkpointing")).then(pl.lit(""))
         .otherwise(pl.lit(", no checkpointing"))).alias("step"))
    base = alt.Chart(data.to_pandas()).encode(
        x=alt.X("length:Q", title="episode tokens", scale=alt.Scale(type="log", base=2)),
        color=alt.Color("step:N", title="step"), shape=alt.Shape("precision:N", title="precision"),
        strokeDash=alt.StrokeDash("precision:N", legend=None), detail="step:N")
    peak = base.mark_line(point=True).encode(y=alt.Y("peak_gb:Q", title="peak resident memory (GB)"))
    speed = base.mark_line(point=True).encode(y=alt.Y("tokens_per_second:Q", title="trained tokens / s"))
    return alt.hconcat(peak.properties(width=280, height=220), speed.properties(width=280, height=220)).properties(
        title="One training step (forward, backward, AdamW) against the episode's length")


def parse_list(text: str, convert) -> list:
    return [convert(part.strip()) for part in text.split(",") if part.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--measure", help=argparse.SUPPRESS)   # internal: one measurement, in a child process
    parser.add_argument("--lengths", default="2048,4096,8192,16384", help="episode lengths in tokens, comma-separated")
    parser.add_argument("--precisions", default="fp32,bf16", help="fp32, bf16 (CPU autocast) or both")
    parser.add_argument("--checkpointing", default="on", help="gradient checkpointing: on, off or on,off")
    parser.add_argument("--chunk", default="none,1024",
                        help="logit_chunk_tokens of the sft and gspo steps: none (TRL's tile), N, or a list")
    parser.add_argument("--fp32-max-length", type=int, default=None, metavar="N",
                        help="measure fp32 only at lengths <= N (fp32 takes about twice bf16's time; the bf16/fp32 "
                             "ratio is read where both were measured)")
    parser.add_argument("--repeats", type=int, default=2, help="steps per measurement (the fastest is reported)")
    parser.add_argument("--kinds", default="baseline,sft,gspo", help="baseline, sft, gspo, gspo-split (comma-separated; "
                        "gspo-split: the group of two in two minibatches, with TRL's separate old-log-prob pass)")
    parser.add_argument("--model", default="smollm2")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds per measurement before it is killed")
    parser.add_argument("--out", help="the JSON file (default: runs/bench/train_memory-<time>.json)")
    parser.add_argument("--figure", help="also write figures/<FIGURE>.png and .svg")
    parser.add_argument("--figures-dir", default=str(REPO / "figures"))
    args = parser.parse_args()
    if args.measure:
        print(RESULT_MARK + json.dumps(measure(json.loads(args.measure))), flush=True)
        return 0

    import polars as pl
    import torch
    import transformers
    import trl

    from progagent_lib.train.precision import cpu_bf16_flags

    lengths = parse_list(args.lengths, int)
    precisions = parse_list(args.precisions, str)
    checkpointing = [{"on": True, "off": False}[v] for v in parse_list(args.checkpointing, str.lower)]
    chunks = parse_list(args.chunk, lambda v: None if v.lower() in ("none", "null", "0") else int(v))
    kinds = parse_list(args.kinds, str)
    if any(n < 16 for n in lengths) or any(p not in ("fp32", "bf16") for p in precisions) or args.repeats < 1 \
            or any(k not in KINDS for k in kinds) or any(c is not None and c < 1 for c in chunks):
        parser.error("lengths >= 16, precisions from fp32,bf16, kinds from baseline,sft,gspo,gspo-split, chunk none or >= 1, "
                     "repeats >= 1")
    if "bf16" in precisions and not torch.cuda.is_available() and not cpu_bf16_flags():
        print("this CPU has no bf16 instructions (avx512_bf16 / amx_bf16): bf16 left out (the trainers refuse it)")
        precisions = [p for p in precisions if p != "bf16"]
    out = Path(args.out) if args.out else REPO / "runs" / "bench" / f"train_memory-{datetime.now():%Y%m%d-%H%M%S}.json"

    specs = []
    for ckpt in checkpointing:
        for length in lengths:
            for precision in precisions:
                if precision == "fp32" and args.fp32_max_length is not None and length > args.fp32_max_length:
                    continue
                common = {"length": length, "precision": precision, "checkpointing": ckpt, "repeats": args.repeats,
                          "model": args.model, "seed": args.seed}
                if "baseline" in kinds:
                    specs.append({**common, "kind": "baseline", "chunk": None})
                specs += [{**common, "kind": kind, "chunk": chunk} for chunk in chunks for kind in KINDS[1:]
                          if kind in kinds]
    settings = {"args": vars(args), "python": platform.python_version(), "torch": torch.__version__,
                "transformers": transformers.__version__, "trl": trl.__version__, "cpus": os.cpu_count(),
                "cpu_bf16_flags": cpu_bf16_flags(), "machine": platform.machine()}
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for index, spec in enumerate(specs, 1):
        print(f"[{index}/{len(specs)}] {spec['kind']} {spec['length']} tokens {spec['precision']} checkpointing "
              f"{'on' if spec['checkpointing'] else 'off'} tile {spec['chunk'] or 'TRL'}", flush=True)
        rows.append(run_child(spec, args.timeout))
        # written after every measurement: a run cut short keeps what it measured
        out.write_text(json.dumps({"settings": settings, "rows": rows, "complete": False}, indent=2))
    frame = with_ratios(rows)
    out.write_text(json.dumps({"settings": settings, "rows": frame.to_dicts(), "complete": True}, indent=2))
    shown = frame.select("length", "precision", "checkpointing", "kind", "chunk", "status", "seconds",
                         "tokens_per_second", "peak_gb", "resident_gb", "peak_vs_baseline", "speed_vs_baseline",
                         "peak_bf16_vs_fp32", "speed_bf16_vs_fp32")
    with pl.Config(tbl_rows=-1, tbl_cols=-1, tbl_width_chars=250, float_precision=3, tbl_hide_dataframe_shape=True):
        print(shown)
    print(f"written: {out}")
    if args.figure:
        from progagent_lib.analysis.style import save_chart

        for path in save_chart(figure(frame), args.figure, args.figures_dir):
            print(f"written: {path}")
    return 0 if all(row["status"] == "ok" for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
