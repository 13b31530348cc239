"""The paper's three recipes on one base model: base -> SFT -> GSPO for each trained harness, every stage
evaluated on held-out seeds (never seen in SFT or RL).

    progagent train pipeline --config configs/cpu-smoke.yaml

`Recipe` holds the stages so the notebooks can run them one at a time (04: teacher + SFT, 05: GSPO,
07: evaluation); `run_pipeline` runs them all. Before any compute, `check` refuses a config under which
the teacher itself cannot finish (feasibility.check_learnable). Every evaluation appends rows to
`<output_dir>/learning.jsonl`: one per (stage, harness, scale) with episodes, pass_rate, mean_score, model.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from .evaluate import EvalConfig, evaluate
from .gspo import GSPORunConfig, limits_of, run_gspo, select_tasks
from .sft import SFTRunConfig, load_trajectories, run_sft, select_sft_trajectories, teacher_trajectories

LEARNING_FILE = "learning.jsonl"
STAGES = ("base", "sft", "gspo")


@dataclass
class PipelineConfig:
    output_dir: str = "runs/cpu-smoke-pipeline"
    model: str = "smollm2"                   # the base model every recipe starts from (a registered name, folder, hub id)
    chat_template: str | None = None         # None: the model's own or its registered choice
    rl_harnesses: list[str] = field(default_factory=lambda: ["ptc"])   # the trained harnesses: one recipe each
    stages: list[str] = field(default_factory=lambda: list(STAGES))
    check: bool = True                       # refuse a config the teacher cannot finish under
    check_tasks: int | None = 4              # training tasks the check replays the teacher on (None: all)
    # A `progagent engine serve --model <model>` server: GSPO's rollouts and every evaluation generate there
    # (each stage's weights are loaded into it first); None: transformers' generate in this process.
    engine_url: str | None = None
    engine_model: str | None = None          # its served name (default: the model's short name)
    sft: SFTRunConfig = field(default_factory=SFTRunConfig)      # model, harnesses and output_dir are set per recipe
    gspo: GSPORunConfig = field(default_factory=GSPORunConfig)   # model, harness and output_dir are set per recipe
    eval: EvalConfig = field(default_factory=EvalConfig)         # model, stage and output_dir are set per evaluation


class Recipe:
    """The stages of one pipeline config, each resumable from what is on disk."""

    def __init__(self, config: PipelineConfig, output_dir: str | Path | None = None):
        self.config = config
        self.out = Path(output_dir or config.output_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        seconds = self.out / "seconds.json"
        self.seconds: dict[str, float] = json.loads(seconds.read_text()) if seconds.exists() else {}
        self.base_model = config.model   # "tiny": a from-scratch model built from config.sft.tiny

    # --- paths -------------------------------------------------------------------------------------
    def model_for(self, stage: str, harness: str) -> str:
        if stage == "base":
            return self.base_model if self.base_model != "tiny" else str(self.out / f"sft-{harness}" / "initial")
        if stage == "sft":
            return str(self.out / f"sft-{harness}" / "final")
        if stage == "gspo":
            return str(self.out / f"gspo-{harness}" / "final")
        raise ValueError(f"unknown stage {stage!r}; stages are {STAGES}")

    def engine(self) -> dict[str, str]:
        """The GSPO and evaluation settings that make them generate through the pipeline's engine, if it has one."""
        if not self.config.engine_url:
            return {}
        return {"engine_url": self.config.engine_url,
                "engine_model": self.config.engine_model or Path(str(self.base_model)).name}

    def _timed(self, name: str, started: float) -> None:
        self.seconds[name] = time.perf_counter() - started   # the stage's latest run
        (self.out / "seconds.json").write_text(json.dumps(self.seconds, indent=2))

    # --- stages ------------------------------------------------------------------------------------
    def check(self) -> list[dict]:
        """Refuse (NotLearnableError) unless the teacher finishes every trained harness and task under the GSPO and
        evaluation limits, SFT's max_length and the model's positions. The teacher's needs under all three
        harnesses (trained or not) go to teacher_needs.json, with whether each fits."""
        from ..harness.chat_format import ChatFormat
        from .feasibility import check_learnable, measure, problems_of
        from .models import build_tiny_model, load_model

        started = time.perf_counter()
        if self.base_model == "tiny":
            model, tokenizer = build_tiny_model(self.config.sft.tasks_root, self.config.sft.tiny)
        else:
            model, tokenizer = load_model(self.base_model, chat_template=self.config.chat_template)
        positions = model_positions(model.config)
        del model
        chat = ChatFormat(tokenizer, model_name=self.base_model)
        tasks = select_tasks(self.config.sft.tasks_root, self.config.gspo.task_ids or self.config.sft.task_ids)
        if self.config.check_tasks is not None:
            tasks = tasks[: self.config.check_tasks]
        budgets = [limits_of(self.config.gspo), limits_of(self.config.eval)]
        reported = list(dict.fromkeys([*self.config.rl_harnesses, "dtc", "ptc", "hybrid"]))
        measured = measure(tasks, reported, chat, scale=self.config.gspo.scales[0])
        table = [{**asdict(n), "trained": n.harness in self.config.rl_harnesses, "positions": positions,
                  "fits": not problems_of(n, budgets, self.config.sft.max_length, positions)} for n in measured]
        (self.out / "teacher_needs.json").write_text(json.dumps(table, indent=2))
        self._timed("check", started)
        check_learnable(tasks, self.config.rl_harnesses, chat, budgets, max_length=self.config.sft.max_length,
                        model_positions=positions, measured=measured)
        return table

    def teacher(self) -> dict[str, list[Any]]:
        """Teacher trajectories for every trained harness, balanced (equal numbers, every task covered)."""
        started = time.perf_counter()
        sft = self.config.sft
        tasks = select_tasks(sft.tasks_root, sft.task_ids)
        path = self.out / "teacher.jsonl"
        if sft.trajectories:
            trajectories = load_trajectories(sft.trajectories)
        elif path.exists():
            trajectories = load_trajectories([str(path)])
        else:
            partial = path.with_suffix(".partial")
            partial.unlink(missing_ok=True)
            trajectories = teacher_trajectories(replace(sft, harnesses=self.config.rl_harnesses), tasks, save_to=partial)
            partial.rename(path)
        selected, report = select_sft_trajectories(
            [t for t in trajectories if t.harness in self.config.rl_harnesses], min_score=sft.min_score,
            per_harness=sft.per_harness, task_ids=sorted(t.id for t in tasks), harnesses=self.config.rl_harnesses)
        (self.out / "sft_selection.json").write_text(json.dumps(asdict(report), indent=2))
        self._timed("teacher", started)
        return {h: [t for t in selected if t.harness == h] for h in self.config.rl_harnesses}

    def sft(self, harness: str, trajectories: list[Any] | None = None) -> dict:
        """One harness's recipe, stage 1: SFT of the base model on that harness's teacher trajectories."""
        started = time.perf_counter()
        trajectories = trajectories if trajectories is not None else self.teacher()[harness]
        config = replace(self.config.sft, model=self.base_model, chat_template=self.config.chat_template,
                         harnesses=[harness], output_dir=str(self.out / f"sft-{harness}"))
        result = run_sft(config, trajectories, preselected=True)
        self._timed(f"sft_{harness}", started)
        return result

    def gspo(self, harness: str) -> dict:
        """Stage 2: GSPO under the harness, from its own SFT model."""
        started = time.perf_counter()
        config = replace(self.config.gspo, model=self.model_for("sft", harness), harness=harness,
                         output_dir=str(self.out / f"gspo-{harness}"), **self.engine())
        result = run_gspo(config)
        self._timed(f"gspo_{harness}", started)
        return result

    def evaluate(self, stage: str, harness: str, harnesses: list[str] | None = None) -> list[dict]:
        """Evaluate the (stage, recipe harness) model under `harnesses` (default: its own) on held-out seeds;
        append its rows to learning.jsonl (rows of an earlier evaluation of the same model are replaced)."""
        started = time.perf_counter()
        model = self.model_for(stage, harness)
        harnesses = harnesses or [harness]
        name = f"{stage}-{harness}"
        _, table = evaluate(replace(self.config.eval, model=model, stage=name, chat_template=self.config.chat_template,
                                    harnesses=harnesses, output_dir=str(self.out / "eval" / name), **self.engine()))
        rows = [{"stage": stage, "recipe": harness, "harness": r.harness, "scale": r.scale, "episodes": r.episodes,
                 "errored": r.errored, "pass_rate": r.pass_rate, "mean_score": r.mean_score,
                 "claim_done_rate": r.claim_done_rate, "model": model,
                 "seeds": list(self.config.eval.seeds)} for r in table]
        write_learning_rows(self.out / LEARNING_FILE, rows)
        self._timed(f"eval_{name}", started)
        return rows


def model_positions(config: Any) -> int | None:
    """The context a model can take: its positions, times a configured rope scaling factor."""
    positions = getattr(config, "max_position_embeddings", None)
    scaling = getattr(config, "rope_scaling", None) or {}
    if positions and isinstance(scaling, dict) and scaling.get("factor") and scaling.get("rope_type", scaling.get("type")) not in (None, "default"):
        base = scaling.get("original_max_position_embeddings") or positions
        positions = max(positions, int(base * float(scaling["factor"])))
    return positions


def write_learning_rows(path: Path, rows: list[dict]) -> None:
    """Add rows to learning.jsonl, replacing rows of the same (stage, recipe, harness, scale)."""
    key = lambda r: (r["stage"], r.get("recipe", r["harness"]), r["harness"], r["scale"])  # noqa: E731
    new = {key(r) for r in rows}
    kept = [r for r in read_learning(path) if key(r) not in new]
    path.write_text("".join(json.dumps(r) + "\n" for r in kept + rows))


def read_learning(path: str | Path) -> list[dict]:
    path = Path(path)
    if path.is_dir():
        path = path / LEARNING_FILE
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def run_pipeline(config: PipelineConfig) -> dict:
    """Every stage of every recipe; returns the learning rows and the seconds of each stage."""
    recipe = Recipe(config)
    if config.check:
        recipe.check()
    teacher = recipe.teacher()
    rows = []
    for harness in config.rl_harnesses:
        if "base" in config.stages and config.model != "tiny":
            rows += recipe.evaluate("base", harness)
        if "sft" in config.stages:
            recipe.sft(harness, teacher[harness])
            rows += recipe.evaluate("sft", harness)
        if "gspo" in config.stages:
            recipe.gspo(harness)
            rows += recipe.evaluate("gspo", harness)
    summary = {"learning": rows, "seconds": recipe.seconds, "total_seconds": sum(recipe.seconds.values())}
    (recipe.out / "summary.json").write_text(json.dumps(summary, indent=2))
    (recipe.out / "summary.md").write_text(format_summary(rows, recipe.seconds) + "\n")
    return summary


def format_summary(rows: list[dict], seconds: dict[str, float]) -> str:
    lines = ["| stage | recipe | harness | scale | episodes | errored | pass rate | mean R~ | claim_done rate |",
             "|---|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['stage']} | {r['recipe']} | {r['harness']} | {r['scale']} | {r['episodes']} | {r['errored']} | "
              f"{r['pass_rate']:.3f} | {r['mean_score']:.3f} | {r['claim_done_rate']:.3f} |" for r in rows]
    lines += ["", "Seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items()) + f"; total {sum(seconds.values()):.0f}"]
    return "\n".join(lines)
