"""The whole recipe in one run: SFT, then GSPO under each harness, each model evaluated on held-out seeds.

This is what `progagent train pipeline --config configs/cpu-smoke.yaml` runs; it writes `summary.json` and
`summary.md` (pass rate after SFT and after RL, mean reward of the first and last RL steps, per harness).
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from .evaluate import EvalConfig, evaluate
from .gspo import GSPORunConfig, run_gspo
from .sft import SFTRunConfig, run_sft


@dataclass
class PipelineConfig:
    output_dir: str = "runs/cpu-smoke"
    rl_harnesses: list[str] = field(default_factory=lambda: ["dtc", "ptc"])
    sft: SFTRunConfig = field(default_factory=SFTRunConfig)
    gspo: GSPORunConfig = field(default_factory=GSPORunConfig)   # model, harness and output_dir are set per run
    eval: EvalConfig = field(default_factory=EvalConfig)          # model, harnesses and output_dir are set per run


@dataclass
class HarnessOutcome:
    harness: str
    pass_rate_after_sft: float
    pass_rate_after_rl: float
    mean_score_after_sft: float
    mean_score_after_rl: float
    first_step_mean_reward: float
    last_step_mean_reward: float
    rl_steps: int
    eval_episodes: int


def run_pipeline(config: PipelineConfig) -> dict:
    out = Path(config.output_dir)
    timings: dict[str, float] = {}

    started = time.perf_counter()
    sft = run_sft(replace(config.sft, output_dir=str(out / "sft")))
    timings["sft"] = time.perf_counter() - started
    sft_model = sft["final_model"]

    started = time.perf_counter()
    _, after_sft = evaluate(replace(config.eval, model=sft_model, harnesses=config.rl_harnesses,
                                    output_dir=str(out / "eval-sft")))
    timings["eval_sft"] = time.perf_counter() - started
    after_sft_by = {row.harness: row for row in after_sft}

    outcomes = []
    for harness in config.rl_harnesses:
        started = time.perf_counter()
        rl = run_gspo(replace(config.gspo, model=sft_model, harness=harness, output_dir=str(out / f"gspo-{harness}")))
        timings[f"gspo_{harness}"] = time.perf_counter() - started
        started = time.perf_counter()
        _, after_rl = evaluate(replace(config.eval, model=rl["final_model"], harnesses=[harness],
                                       output_dir=str(out / f"eval-gspo-{harness}")))
        timings[f"eval_gspo_{harness}"] = time.perf_counter() - started
        steps = rl["dynamics"]
        outcomes.append(HarnessOutcome(
            harness, after_sft_by[harness].pass_rate, after_rl[0].pass_rate, after_sft_by[harness].mean_score,
            after_rl[0].mean_score, steps[0]["mean_reward"] if steps else float("nan"),
            steps[-1]["mean_reward"] if steps else float("nan"), len(steps), after_rl[0].episodes))

    summary = {"sft": sft, "outcomes": [asdict(o) for o in outcomes], "seconds": timings,
               "total_seconds": sum(timings.values())}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    (out / "summary.md").write_text(format_summary(outcomes, sft, timings) + "\n")
    return summary


def format_summary(outcomes: list[HarnessOutcome], sft: dict, timings: dict[str, float]) -> str:
    lines = [f"SFT: {sft['steps']} steps, loss {sft['first_loss']:.3f} -> {sft['last_loss']:.3f}, "
             f"dataset {sft['dataset']['kept']}", "",
             "| harness | pass@held-out after SFT | after RL | mean R~ after SFT | after RL | RL step 1 mean reward | last RL step mean reward | RL steps | eval episodes |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {o.harness} | {o.pass_rate_after_sft:.3f} | {o.pass_rate_after_rl:.3f} | {o.mean_score_after_sft:.3f} | "
              f"{o.mean_score_after_rl:.3f} | {o.first_step_mean_reward:.3f} | {o.last_step_mean_reward:.3f} | {o.rl_steps} | {o.eval_episodes} |"
              for o in outcomes]
    lines += ["", "Seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in timings.items()) + f"; total {sum(timings.values()):.0f}"]
    return "\n".join(lines)
