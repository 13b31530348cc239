"""The paper's three recipes on one base model: base -> SFT -> GSPO for each trained harness, every stage
evaluated on three held-out splits (train.splits: (a) seeds, (b) instruction parameters, (c) tasks), beside the
memorization baseline (the teacher's trained programs, retrieved by instruction and replayed) and a control (the
SFT model trained further on teacher data for as many optimizer steps as GSPO took).

    progagent train pipeline --config configs/cpu-smoke.yaml

`Recipe` holds the stages so the notebooks can run them one at a time (04: teacher + SFT, 05: GSPO and the
control, 07: evaluation); `run_pipeline` runs them all. Before any compute, `check` refuses a config under which
the teacher itself cannot finish on a training or evaluation task (feasibility.check_learnable), and the splits
are built and proven disjoint from training. Every evaluation writes rows to `<output_dir>/learning.jsonl`: one per
(stage, recipe, harness, split, decoding) with pass rate and mean R~ and their 95% intervals, the process metrics,
and the run's identity (config hash, commit); a file never holds two runs (train.scoring).

Under `torchrun`/`accelerate launch` with N ranks the run gives the single process's files (train.ranks): training
(SFT, GSPO, the control) is every rank's; the check, the splits, the teacher, every evaluation and every file of this
module are the main rank's, their results broadcast; each trained model is complete on disk before any rank goes on.
"""

from __future__ import annotations

import json
import shutil
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict

from ..config import (
    check_bool,
    check_choices,
    check_engine,
    check_int,
    check_nested,
    check_number,
    check_task_ids,
    check_text,
    config_error,
)
from .evaluate import TRAJECTORIES_FILE, EvalConfig, evaluate, evaluate_together
from ..harness.spec import DEFAULT_HARNESS, HARNESSES
from ..harness.trajectory import read_jsonl
from .common import (
    AFTER_RL_DIR,
    BEFORE_RL_DIR,
    HARNESS_NAMES,
    LEARNING_FILE,
    SHARED_STAGES,
    STAGES,
    limits_of,
    model_positions,
    read_json_lines,
    select_tasks,
)
from .gspo import GSPORunConfig, run_gspo
from .paired import PAIRED_FILE, format_paired, paired_rows, write_paired
from .ranks import is_main, on_main
from .scoring import commit_of, config_hash, format_learning_table, learning_rows
from .sft import SFTRunConfig, load_trajectories, run_sft, select_sft_trajectories, teacher_trajectories
from .splits import Instance, SplitConfig, TrainedInstances, make_splits

SPLITS_FILE = "splits.json"


class EngineSettings(TypedDict, total=False):
    """The GSPO and evaluation config fields that point a stage at the pipeline's engine (none: no engine)."""

    engine_url: str
    engine_model: str


@dataclass
class PipelineConfig:
    """The three recipes on one base model: which stages run, on what, evaluated where."""

    output_dir: str = field(
        default="runs/cpu-smoke-pipeline",
        metadata={"help": "Every stage's folder, learning.jsonl, splits.json and seconds.json."},
    )
    model: str = field(
        default="smollm2",
        metadata={
            "help": "The base model every recipe starts from: 'tiny' (built from sft.tiny), a registered name, a folder "
            "or a hub id."
        },
    )
    chat_template: str | None = field(
        default=None, metadata={"help": "None: the model's own or its registered choice; 'qwen3' or a .jinja path."}
    )
    rl_harnesses: list[str] = field(
        default_factory=lambda: [DEFAULT_HARNESS],
        metadata={"help": "The trained harnesses, one recipe (SFT then GSPO under it) each: dtc, ptc, hybrid."},
    )
    eval_harnesses: list[str] = field(
        default_factory=list,
        metadata={
            "help": "The harnesses every stage of every recipe is evaluated under (its learning rows carry recipe and "
            "harness); empty: each recipe under its own harness only."
        },
    )
    stages: list[str] = field(
        default_factory=lambda: list(STAGES),
        metadata={
            "help": "The stages run, in order: base, memorize, sft, gspo, control, rft (control and rft need gspo)."
        },
    )
    check: bool = field(
        default=True,
        metadata={"help": "Refuse a config the teacher cannot finish under (every training and held-out task)."},
    )
    splits: SplitConfig = field(
        default_factory=SplitConfig, metadata={"help": "The held-out instances every stage is evaluated on."}
    )
    control_learning_rate: float | None = field(
        default=None,
        metadata={
            "help": "Learning rate of the SFT control and RFT (null: GSPO's, with GSPO's scheduler), so that they "
            "differ from GSPO in objective and data, not in step size; SFT's own rate restarted from a converged "
            "model with fresh AdamW moments moves every weight by about that rate per step."
        },
    )
    sampled: int = field(
        default=4,
        metadata={
            "help": "Sampled episodes per held-out instance at GSPO's temperature, beside the greedy one (0: greedy "
            "only)."
        },
    )
    sampled_stages: list[str] | None = field(
        default=None,
        metadata={
            "help": "The stages whose held-out evaluation is sampled too (`sampled` per instance); the others are "
            "greedy only. None: every evaluated stage (the memorization baseline's program is fixed and never is)."
        },
    )
    # Each stage's weights are loaded into the engine first.
    engine_url: str | None = field(
        default=None,
        metadata={
            "help": "A `progagent engine serve --model <model>` server: GSPO's rollouts and every evaluation generate "
            "there. None: transformers' generate in this process."
        },
    )
    engine_model: str | None = field(
        default=None,
        metadata={"help": "The engine's served name (default: the model's short name); only with engine_url."},
    )
    sft: SFTRunConfig = field(
        default_factory=SFTRunConfig,
        metadata={"help": "SFT settings (model, harnesses and output_dir are set per recipe)."},
    )
    sft_max_steps: dict[str, int] = field(
        default_factory=dict,
        metadata={
            "help": "SFT's optimizer steps for some recipes, e.g. {ptc: 16}; the others take sft.max_steps. A recipe's "
            "teacher episodes differ in how much of them the model writes (a DTC episode is mostly tool "
            "output, a PTC one mostly program), so equal steps can leave one recipe unfit."
        },
    )
    gspo: GSPORunConfig = field(
        default_factory=GSPORunConfig,
        metadata={"help": "GSPO settings (model, harness and output_dir are set per recipe)."},
    )
    eval: EvalConfig = field(
        default_factory=EvalConfig,
        metadata={"help": "Evaluation settings (model, stage and output_dir are set per evaluation)."},
    )

    def __post_init__(self) -> None:
        check_text(self, "output_dir")
        check_text(self, "model")
        check_text(self, "chat_template", optional=True)
        check_choices(self, "rl_harnesses", HARNESS_NAMES)
        check_choices(self, "eval_harnesses", HARNESS_NAMES, empty=True)
        if not isinstance(self.stages, (list, tuple)):
            raise config_error(self, "stages", f"must be a list of stages from {', '.join(STAGES)}")
        unknown = [s for s in self.stages if s not in STAGES]
        if unknown:
            raise config_error(self, "stages", f"unknown stage(s) {unknown}; stages are {list(STAGES)}")
        if "control" in self.stages and "gspo" not in self.stages:
            raise config_error(
                self,
                "stages",
                "the control (SFT for as many optimizer steps as GSPO) needs the gspo stage; add gspo or drop control",
            )
        if "rft" in self.stages and "gspo" not in self.stages:
            raise config_error(
                self,
                "stages",
                "rft (SFT on its own R = 1 samples with GSPO's rollout budget and steps) needs the gspo stage; add "
                "gspo or drop rft",
            )
        check_bool(self, "check")
        check_nested(self, "splits", SplitConfig)
        check_int(self, "sampled", at_least=0, why=" (sampled episodes per instance; 0: greedy only)")
        if self.sampled_stages is not None:  # the memorization baseline's program is fixed: never sampled
            check_choices(self, "sampled_stages", [s for s in STAGES if s != "memorize"], empty=True)
        check_number(self, "control_learning_rate", above=0, optional=True)
        check_engine(self)
        check_nested(self, "sft", SFTRunConfig)
        if not isinstance(self.sft_max_steps, dict):
            raise config_error(self, "sft_max_steps", "must map trained harnesses to step counts, e.g. {ptc: 16}")
        for recipe, steps in self.sft_max_steps.items():
            if recipe not in self.rl_harnesses:
                raise config_error(
                    self,
                    "sft_max_steps",
                    f"names {recipe!r}, which is not a trained harness; rl_harnesses are {list(self.rl_harnesses)}",
                )
            if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
                raise config_error(self, "sft_max_steps", f"{recipe}: {steps!r} is not a step count >= 1")
        check_nested(self, "gspo", GSPORunConfig)
        check_nested(self, "eval", EvalConfig)
        if self.engine_url and self.gspo.use_vllm:
            raise config_error(
                self, "engine_url", "and gspo.use_vllm=True name two generators for GSPO's rollouts; keep one"
            )
        if self.engine_url and self.eval.vllm_server_base_url:
            raise config_error(
                self, "engine_url", "and eval.vllm_server_base_url name two generators for the evaluations; keep one"
            )

    def validate_tasks(self) -> None:
        """Every task id (SFT's, GSPO's, evaluation's, the held-out split's) exists under its tasks_root (when that
        folder exists): called by run_pipeline and Recipe, not at construction."""
        self.sft.validate_tasks()
        self.gspo.validate_tasks()
        self.eval.validate_tasks()
        check_task_ids(self.splits, "held_out_tasks", self.sft.tasks_root)


class Recipe:
    """The stages of one pipeline config, each resumable from what is on disk."""

    def __init__(self, config: PipelineConfig, output_dir: str | Path | None = None):
        config.validate_tasks()  # every task id names a task of the pool, before any stage runs
        self.config = config
        self.out = Path(output_dir or config.output_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        seconds = self.out / "seconds.json"
        self.seconds: dict[str, float] = json.loads(seconds.read_text()) if seconds.exists() else {}
        self.base_model = config.model  # "tiny": a from-scratch model built from config.sft.tiny
        # Who produced every row this recipe writes: the config (without where generation ran) and the checkout.
        self.identity = {"run": config_hash(config), "commit": commit_of()}
        self._instances: list[Instance] | None = None
        # rows of a stage's held-out evaluation played beside the paired probe (_probe_after), by (stage, recipe,
        # harnesses): the stamp of the weights evaluated, and the rows; `evaluate` hands them back for those weights
        self._evaluated_beside: dict[tuple[str, str, tuple[str, ...]], tuple[tuple, list[dict]]] = {}

    # --- paths -------------------------------------------------------------------------------------
    def model_for(self, stage: str, harness: str) -> str:
        if stage == "base":
            return self.base_model if self.base_model != "tiny" else str(self.out / f"sft-{harness}" / "initial")
        if stage == "sft":
            return str(self.out / f"sft-{harness}" / "final")
        if stage == "gspo":
            return str(self.out / f"gspo-{harness}" / "final")
        if stage in ("control", "rft"):
            return str(self.out / f"{stage}-{harness}" / "final")
        raise ValueError(f"unknown stage {stage!r}; stages are {STAGES}")

    def engine(self) -> EngineSettings:
        """The GSPO and evaluation settings that make them generate through the pipeline's engine, if it has one."""
        if not self.config.engine_url:
            return {}
        return {
            "engine_url": self.config.engine_url,
            "engine_model": self.config.engine_model or Path(str(self.base_model)).name,
        }

    def _timed(self, name: str, started: float) -> None:
        self.seconds[name] = time.perf_counter() - started  # the stage's latest run
        if is_main():
            (self.out / "seconds.json").write_text(json.dumps(self.seconds, indent=2))

    # --- stages ------------------------------------------------------------------------------------
    def check(self) -> list[dict]:
        """Refuse (NotLearnableError) unless the teacher finishes, under every trained harness, every training task
        within the GSPO and evaluation limits, SFT's max_length and the model's positions, and every held-out task
        within the evaluation limits. The needs go to teacher_needs.json (with DTC/Hybrid on one training task).
        Checked once, on the main rank; its verdict reaches every rank."""
        self.instances()  # built here on every rank: built inside the main rank's check, only the main rank would hold them
        return on_main(self._check)

    def _check(self) -> list[dict]:
        from ..harness.chat_format import ChatFormat
        from .feasibility import check_learnable, measure, problems_of
        from ..generation.sources import load_model
        from ..generation.tiny_model import build_tiny_model

        started = time.perf_counter()
        if self.base_model == "tiny":
            model, tokenizer = build_tiny_model(self.config.sft.tasks_root, self.config.sft.tiny)
        else:
            model, tokenizer = load_model(self.base_model, chat_template=self.config.chat_template)
        positions = model_positions(model.config)
        del model
        chat = ChatFormat(tokenizer, model_name=self.base_model)
        instances = self.instances()  # refuses a split that is empty or leaks a trained instance
        training = self.training_tasks()
        trained_ids = {t.id for t in training}
        held_out_ids = sorted({i.task_id for i in instances} - trained_ids)
        # (select_tasks reads an empty list as "every task")
        held_out = select_tasks(self.config.sft.tasks_root, held_out_ids) if held_out_ids else []
        train_budgets = [limits_of(self.config.gspo), limits_of(self.config.eval)]
        eval_budgets = [limits_of(self.config.eval)]
        # Every training task (GSPO and evaluation limits, SFT's max_length) and every held-out task (evaluation
        # limits) under every trained harness; the other harnesses are measured on the first training task, to show
        # what they need against the model's positions.
        # A harness only evaluated under (eval_harnesses) is held to the evaluation limits on every task.
        scale = self.config.gspo.scales[0]
        trained = self.config.rl_harnesses
        played = self.played_harnesses()
        evaluated = [h for h in played if h not in trained]
        reading = self.config.sft.teacher_reading  # the teacher SFT learns from is the one measured
        measured = measure(training, played, chat, scale=scale, reading=reading)
        measured_held_out = measure(held_out, played, chat, scale=scale, reading=reading)
        others = [h for h in HARNESSES if h not in played]
        shown = measure(training[:1], others, chat, scale=scale, reading=reading)
        table = [
            {
                **asdict(n),
                "role": "train",
                "trained": n.harness in trained,
                "positions": positions,
                "fits": not (
                    problems_of(n, train_budgets, self.config.sft.max_length, positions)
                    if n.harness in trained
                    else problems_of(n, eval_budgets, None, positions)
                ),
            }
            for n in measured + shown
        ]
        table += [
            {
                **asdict(n),
                "role": "held-out",
                "trained": False,
                "positions": positions,
                "fits": not problems_of(n, eval_budgets, None, positions),
            }
            for n in measured_held_out
        ]
        (self.out / "teacher_needs.json").write_text(json.dumps(table, indent=2))
        self._timed("check", started)
        check_learnable(
            training,
            trained,
            chat,
            train_budgets,
            max_length=self.config.sft.max_length,
            model_positions=positions,
            measured=measured + shown,
        )
        if evaluated:
            check_learnable(
                training, evaluated, chat, eval_budgets, max_length=None, model_positions=positions, measured=measured
            )
        check_learnable(
            held_out, played, chat, eval_budgets, max_length=None, model_positions=positions, measured=measured_held_out
        )
        return table

    def played_harnesses(self) -> list[str]:
        """Every harness a model of this pipeline plays: the trained ones and those it is evaluated under."""
        return list(dict.fromkeys([*self.config.rl_harnesses, *self.config.eval_harnesses]))

    def training_tasks(self) -> list[Any]:
        ids = list(dict.fromkeys([*self.config.sft.task_ids, *self.config.gspo.task_ids]))
        return select_tasks(self.config.sft.tasks_root, ids)

    def trained_instances(self) -> TrainedInstances:
        """Every (task, seed) any training stage sees: SFT's teacher episodes and GSPO's prompts (at any scale)."""
        sft, gspo = self.config.sft, self.config.gspo
        sft_ids = sft.task_ids or [t.id for t in select_tasks(sft.tasks_root, [])]
        gspo_ids = gspo.task_ids or [t.id for t in select_tasks(gspo.tasks_root, [])]
        return TrainedInstances().add(sft_ids, sft.seeds).add(gspo_ids, gspo.train_seeds)

    def instances(self) -> list[Instance]:
        """The held-out instances of the three splits (built once, by the main rank, written to splits.json)."""
        if self._instances is None:
            self._instances = on_main(self._make_instances)
        return self._instances

    def _make_instances(self) -> list[Instance]:
        pool = {t.id: t for t in select_tasks(self.config.sft.tasks_root, [])}
        instances = make_splits(pool, self.trained_instances(), self.config.splits)
        (self.out / SPLITS_FILE).write_text(json.dumps([i.to_dict() for i in instances], indent=1))
        return instances

    def _rows(self, trajectories: list[Any], **fields: Any) -> list[dict]:
        split_of = {(i.task_id, i.scale, i.seed): i.split for i in self.instances()}
        new_values_of = {(i.task_id, i.scale, i.seed): i.new_values for i in self.instances()}
        limits = asdict(limits_of(self.config.eval))
        return learning_rows(trajectories, split_of, new_values_of, **self.identity, limits=limits, **fields)

    def teacher(self) -> dict[str, list[Any]]:
        """Teacher trajectories for every trained harness, balanced (equal numbers, every task covered): played,
        selected and written once, by the main rank; every rank gets the selection."""
        return on_main(self._teacher)

    def _teacher(self) -> dict[str, list[Any]]:
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
            trajectories = teacher_trajectories(
                replace(sft, harnesses=self.config.rl_harnesses), tasks, save_to=partial
            )
            partial.rename(path)
        selected, report = select_sft_trajectories(
            [t for t in trajectories if t.harness in self.config.rl_harnesses],
            min_score=sft.min_score,
            per_harness=sft.per_harness,
            task_ids=sorted(t.id for t in tasks),
            harnesses=self.config.rl_harnesses,
        )
        (self.out / "sft_selection.json").write_text(json.dumps(asdict(report), indent=2))
        self._timed("teacher", started)
        return {h: [t for t in selected if t.harness == h] for h in self.config.rl_harnesses}

    def sft(self, harness: str, trajectories: list[Any] | None = None) -> dict:
        """One harness's recipe, stage 1: SFT of the base model on that harness's teacher trajectories."""
        started = time.perf_counter()
        trajectories = trajectories if trajectories is not None else self.teacher()[harness]
        config = replace(
            self.config.sft,
            model=self.base_model,
            chat_template=self.config.chat_template,
            harnesses=[harness],
            output_dir=str(self.out / f"sft-{harness}"),
            max_steps=self.config.sft_max_steps.get(harness, self.config.sft.max_steps),
        )
        result = run_sft(config, trajectories, preselected=True)
        self._timed(f"sft_{harness}", started)
        return result

    def gspo(self, harness: str) -> dict:
        """Stage 2: GSPO under the harness, from its own SFT model."""
        started = time.perf_counter()
        config = replace(
            self.config.gspo,
            model=self.model_for("sft", harness),
            harness=harness,
            output_dir=str(self.out / f"gspo-{harness}"),
            **self.engine(),
        )
        result = run_gspo(config)
        self._timed(f"gspo_{harness}", started)
        started = time.perf_counter()
        result["probe_after"] = self.probe_after(harness)
        if result["probe_after"] is not None:
            self._timed(f"probe_after_gspo_{harness}", started)
        return result

    def control(self, harness: str, trajectories: list[Any] | None = None) -> dict:
        """The control of the GSPO stage: the SFT model trained further on the same teacher data for as many
        optimizer steps as GSPO took, at its step size (control_sft_config). What RL adds beyond more SFT is GSPO
        minus this."""
        started = time.perf_counter()
        trajectories = trajectories if trajectories is not None else self.teacher()[harness]
        result = self._continued_sft("control", harness, trajectories)
        self._timed(f"control_{harness}", started)
        return result

    def control_sft_config(self, stage: str, harness: str, **changes: Any) -> SFTRunConfig:
        """SFT continued from the recipe's SFT model for as many optimizer steps as GSPO took, at GSPO's learning
        rate and scheduler (or control_learning_rate) and through GSPO's LoRA adapters when it trains some: a control
        at GSPO's compute, step size and trained weights, otherwise with SFT's settings (`changes`: other SFT
        settings)."""
        return replace(
            self.config.sft,
            model=self.model_for("sft", harness),
            chat_template=self.config.chat_template,
            harnesses=[harness],
            max_steps=on_main(self.gspo_steps, harness),
            output_dir=str(self.out / f"{stage}-{harness}"),
            learning_rate=self.config.control_learning_rate or self.config.gspo.learning_rate,
            lr_scheduler_type=self.config.gspo.lr_scheduler_type,
            lora=self.config.gspo.lora,
            **changes,
        )

    def _continued_sft(self, stage: str, harness: str, trajectories: list[Any], **changes: Any) -> dict:
        return run_sft(self.control_sft_config(stage, harness, **changes), trajectories, preselected=True)

    def rft(self, harness: str) -> dict:
        """The RFT control (rejection-sampling fine-tuning, RAFT): the SFT policy samples GSPO's prompts (the probe's
        informative ones when GSPO probed) as many times as GSPO played episodes, at GSPO's temperature and budgets;
        the R = 1 samples are its SFT data, trained for as many optimizer steps as GSPO took, at its step size.
        What RL adds beyond imitating its own successes is GSPO minus this."""
        started = time.perf_counter()
        samples = on_main(self._rft_samples, harness)
        kept = rft_data(samples)
        out = self.out / f"rft-{harness}"
        if not kept:  # nothing to imitate: the RFT model is the SFT model, and its rows say so (same_weights_as)
            print(f"rft-{harness}: none of {len(samples)} samples passed (R = 1); the RFT model is the SFT model")
            on_main(shutil.copytree, self.model_for("sft", harness), out / "final", dirs_exist_ok=True)
            self._timed(f"rft_{harness}", started)
            return {"final_model": str(out / "final"), "samples": len(samples), "kept": 0}
        result = self._continued_sft("rft", harness, kept, min_score=1.0)
        self._timed(f"rft_{harness}", started)
        return {**result, "samples": len(samples), "kept": len(kept)}

    def _rft_samples(self, harness: str) -> list[Any]:
        from .gspo import DYNAMICS_FILE, DynamicsLog
        from .informative import PROBE_DIR, PROBE_FILE, candidate_prompts, read_rates, rollout_sampling

        gspo = self.config.gspo
        probe = self.out / f"gspo-{harness}" / PROBE_FILE
        if probe.exists():
            prompts = [[r.task_id, r.scale, r.seed] for r in read_rates(probe)]
        else:
            tasks = select_tasks(gspo.tasks_root, gspo.task_ids)
            prompts = [
                [t.id, scale, seed] for t, scale, seed in candidate_prompts(tasks, gspo.scales, gspo.train_seeds)
            ]
        # GSPO's rollout budget: the episodes of each generation batch it trained on, refills included
        lines = DynamicsLog.read(self.out / f"gspo-{harness}" / DYNAMICS_FILE)
        played = sum(
            line.get("episodes", 0) + line.get("refill_groups", 0) * gspo.num_generations
            for line in lines
            if line.get("pass") == 1
        )
        played = played or self.gspo_steps(harness) // (gspo.minibatches * gspo.num_iterations) * (
            gspo.num_generations * gspo.prompts_per_step
        )
        # The probe's samples of these prompts are the SFT policy's, drawn as GSPO draws: they count towards RFT's
        # budget, and only the rest is sampled here.
        # (and so are the paired probe's samples before RL, `probe_after`, when it ran first)
        order = {tuple(p): i for i, p in enumerate(prompts)}
        folder = self.out / f"gspo-{harness}"
        probed = [
            t
            for probe_file in (
                folder / PROBE_DIR / TRAJECTORIES_FILE,
                folder / BEFORE_RL_DIR / PROBE_DIR / TRAJECTORIES_FILE,
            )
            if probe_file.exists()
            for t in read_jsonl(probe_file)
            if (t.task_id, t.scale, t.seed) in order
        ]
        samples = max(0, -(-(played - len(probed)) // len(prompts)))
        if not samples:  # as many as GSPO played, sample by sample over the prompts
            return sorted(probed, key=lambda t: (t.sample, order[(t.task_id, t.scale, t.seed)]))[:played]
        sampler = replace(
            gspo,
            model=self.model_for("sft", harness),
            chat_template=self.config.chat_template,
            harness=harness,
            **self.engine(),
        )
        output_dir = self.out / f"rft-{harness}" / "samples"
        # numbered after the samples it reuses: the same numbers would draw the same random numbers (seed_by_instance)
        first = max((t.sample for t in probed), default=-1) + 1
        sampling = rollout_sampling(sampler, prompts, samples, f"rft-samples-{harness}", output_dir, first)
        trajectories, _ = evaluate(sampling)
        return probed + trajectories

    def paired(self, harness: str) -> list[dict]:
        """GSPO against SFT, the control and RFT on the same held-out instances, per split and decoding
        (train.paired), written to paired.json; on the main rank."""
        return on_main(self._paired, harness)

    def _paired(self, harness: str) -> list[dict]:
        split_of = {(i.task_id, i.scale, i.seed): i.split for i in self.instances()}
        decodings = ["greedy"] + (["sampled"] if self.config.sampled else [])
        rows = paired_rows(self.out, harness, split_of, decodings, read_learning(self.out / LEARNING_FILE))
        earlier = [r for r in _read_json_list(self.out / PAIRED_FILE) if r.get("recipe") != harness]
        write_paired(self.out, earlier + rows)
        return rows

    def probe_after(self, harness: str) -> dict | None:
        """The prompts GSPO trained on (those of its informative groups), sampled by the SFT model and by the GSPO
        model (`post_rl_pass_rates.json` in the GSPO folder): each prompt's rate before and after RL, and the paired
        difference over the samples. None when GSPO did not probe.

        Both sample each prompt `paired_probe_samples` times, numbered after the probe's own samples: the probe's
        rates chose the prompts, so they are biased by that choice (a prompt passed 4 of 4 was left out, so a chosen
        prompt of true rate 0.75 reads low), and fresh samples are not. Before and after use the same sample
        numbers, so on the engine each pair draws the same random numbers (`EvalConfig.first_sample`): what differs
        between them is what RL changed, less the sampler's noise. Each (prompt, sample) is one unit of the paired
        interval: the question is whether these prompts' pass rate rose."""
        return on_main(self._probe_after, harness)

    def _probe_after(self, harness: str) -> dict | None:
        from dataclasses import asdict as as_dict

        from ..stats import paired_difference
        from .gspo import DYNAMICS_FILE, DynamicsLog, trained_prompts
        from .informative import (
            POST_PROBE_FILE,
            PROBE_FILE,
            probe_sampling,
            prompt_of,
            rates_from_trajectories,
            read_rates,
        )

        folder = self.out / f"gspo-{harness}"
        if not (folder / PROBE_FILE).exists():
            return None
        chosen = read_rates(folder / PROBE_FILE)
        # The prompts of the groups GSPO trained on (of the chosen: a log without them, every chosen prompt)
        trained = set(trained_prompts(DynamicsLog.read(folder / DYNAMICS_FILE)))
        chosen = [r for r in chosen if prompt_of(r) in trained] or chosen
        gspo = self.config.gspo
        first = max(r.samples for r in chosen)  # fresh sample numbers: after the probe's own
        samples = gspo.paired_probe_samples or gspo.probe_samples or first
        tasks = select_tasks(gspo.tasks_root, list(dict.fromkeys(r.task_id for r in chosen)))
        before_sampling, after_sampling = (
            probe_sampling(
                replace(
                    self.config.gspo,
                    model=self.model_for(stage, harness),
                    harness=harness,
                    output_dir=str(folder / name),
                    probe_samples=samples,
                    **self.engine(),
                ),
                tasks,
                chosen,
                first_sample=first,
            )
            for name, stage in ((BEFORE_RL_DIR, "sft"), (AFTER_RL_DIR, "gspo"))
        )
        before, _ = evaluate(before_sampling)
        # The GSPO model's held-out evaluation is played beside its probe samples (one weight load; on the engine
        # their episodes share its batches) and handed back by `evaluate("gspo")`. Not where it would be SFT's rows
        # (the same weights), where it is sampled too (cpu-study: its evaluation alone fills the engine's batch), or
        # where nothing generates on an engine.
        gspo_model = self.model_for("gspo", harness)
        harnesses = self.evaluated_under(harness)
        beside = (
            self._evaluations("gspo", harness, harnesses)
            if self.config.engine_url
            and "gspo" in self.config.stages
            and not self.sampled("gspo")
            and not same_weights(gspo_model, self.model_for("sft", harness))
            else []
        )
        results = evaluate_together([after_sampling, *(config for _, config in beside)])
        after = results[0][0]
        if beside:
            rows = self._evaluation_rows("gspo", harness, beside, results[1:])
            self._evaluated_beside[("gspo", harness, tuple(harnesses))] = (weights_stamp(gspo_model), rows)
        passed_before, passed_after = (
            {(t.task_id, t.scale, int(t.seed), t.sample): t.reward == 1.0 for t in episodes if not t.errored}
            for episodes in (before, after)
        )
        pairs = [key for key in passed_before if key in passed_after]
        difference = paired_difference(
            [float(passed_before[k]) for k in pairs], [float(passed_after[k]) for k in pairs]
        )
        rate_before, rate_after = (
            {(r.task_id, r.scale, r.seed): r.rate for r in rates_from_trajectories(episodes)}
            for episodes in (before, after)
        )
        record = {
            "prompts": [
                {
                    "task_id": c.task_id,
                    "scale": c.scale,
                    "seed": c.seed,
                    "chosen_at": c.rate,
                    "before": rate_before.get(key),
                    "after": rate_after.get(key),
                    "samples": samples,
                }
                for c in chosen
                for key in [(c.task_id, c.scale, c.seed)]
            ],
            "unit": "sample",
            "first_sample": first,
            "paired": as_dict(difference),
            "summary": (
                f"pass rate on the {len(chosen)} prompts GSPO trained on, {samples} fresh samples each with the same random "
                f"numbers before and after RL, after minus before: {difference.text()}"
            ),
        }
        (folder / POST_PROBE_FILE).write_text(json.dumps(record, indent=2))
        print(f"gspo-{harness}: {record['summary']}")
        return record

    def gspo_steps(self, harness: str) -> int:
        """The optimizer steps GSPO took (its trainer state), else the configured max_steps."""
        state = self.out / f"gspo-{harness}" / "final" / "trainer_state.json"
        if state.exists():
            return int(json.loads(state.read_text())["global_step"])
        from .gspo import DYNAMICS_FILE, DynamicsLog

        lines = DynamicsLog.read(self.out / f"gspo-{harness}" / DYNAMICS_FILE)
        return max((line["step"] for line in lines), default=self.config.gspo.max_steps)

    def evaluated_under(self, harness: str, harnesses: list[str] | None = None) -> list[str]:
        """The harnesses a recipe's models are evaluated under: those asked for, else the config's eval_harnesses,
        else the recipe's own."""
        return list(harnesses or self.config.eval_harnesses or [harness])

    def evaluate(self, stage: str, harness: str, harnesses: list[str] | None = None) -> list[dict]:
        """Evaluate the (stage, recipe harness) model under `harnesses` (default: the config's eval_harnesses, else
        its own) on the held-out splits,
        greedily and with `sampled` samples per instance at GSPO's temperature; write its rows to learning.jsonl
        (rows of an earlier evaluation of the same stage are replaced). Evaluated, and the reuse of an earlier
        evaluation decided, once, on the main rank; every rank gets the rows."""
        return on_main(self._evaluate, stage, harness, harnesses)

    def _evaluate(self, stage: str, harness: str, harnesses: list[str] | None) -> list[dict]:
        if stage == "memorize":
            return self._memorize(harness, harnesses)
        started = time.perf_counter()
        model = self.model_for(stage, harness)
        harnesses = self.evaluated_under(harness, harnesses)
        name = f"{stage}-{harness}"
        reused = self._same_model_rows(stage, harness, harnesses, model)
        if reused is not None:  # bit-identical weights (e.g. every GSPO step skipped): its episodes would be the same
            write_learning_rows(self.out / LEARNING_FILE, reused)
            self._timed(f"eval_{name}", started)
            return reused
        beside = self._evaluated_beside.pop((stage, harness, tuple(harnesses)), None)
        if beside is not None and beside[0] == weights_stamp(model):  # played beside the paired probe: its rows
            write_learning_rows(self.out / LEARNING_FILE, beside[1])
            self.seconds.pop(f"eval_{name}", None)  # its time is the probe's (probe_after_<stage>_<recipe>)
            self._timed(f"eval_{name}_beside_probe", started)  # handing the rows back
            return beside[1]
        evaluations = self._evaluations(stage, harness, harnesses)
        rows = self._evaluation_rows(stage, harness, evaluations, [evaluate(c) for _, c in evaluations])
        self._timed(f"eval_{name}", started)
        return rows

    def sampled(self, stage: str) -> bool:
        """Whether the stage's held-out evaluation is sampled too (`sampled`, `sampled_stages`)."""
        stages = self.config.sampled_stages
        return bool(self.config.sampled) and stage != "memorize" and (stages is None or stage in stages)

    def _evaluations(self, stage: str, harness: str, harnesses: list[str]) -> list[tuple[str, EvalConfig]]:
        """(decoding, EvalConfig) of each evaluation of the (stage, recipe harness) model on the held-out splits:
        greedy, and with `sampled` samples per instance at GSPO's temperature."""
        instances = [[i.task_id, i.scale, i.seed] for i in self.instances()]
        name = f"{stage}-{harness}"
        decodings = [("greedy", 0.0, 1)] + (
            [("sampled", self.config.gspo.temperature, self.config.sampled)] if self.sampled(stage) else []
        )
        return [
            (
                decoding,
                replace(
                    self.config.eval,
                    model=self.model_for(stage, harness),
                    stage=name,
                    chat_template=self.config.chat_template,
                    harnesses=harnesses,
                    instances=instances,
                    temperature=temperature,
                    samples=samples,
                    output_dir=str(self.out / "eval" / name / decoding),
                    **self.engine(),
                ),
            )
            for decoding, temperature, samples in decodings
        ]

    def _evaluation_rows(
        self, stage: str, harness: str, evaluations: list[tuple[str, EvalConfig]], results: list[tuple]
    ) -> list[dict]:
        """The learning rows of played `evaluations` (their `results`, evaluate's), written to learning.jsonl; refused
        when every episode of one ended in an infrastructure error."""
        rows = []
        for (decoding, config), (trajectories, _) in zip(evaluations, results, strict=True):
            errored = [t for t in trajectories if t.errored]
            if trajectories and len(errored) == len(trajectories):  # e.g. the engine died: no row could mean anything
                raise RuntimeError(
                    f"evaluating {config.stage} ({decoding}): all {len(trajectories)} episodes ended in an "
                    f"infrastructure error, e.g. {errored[0].error[:400]!r}; their trajectories are in "
                    f"{config.output_dir}"
                )
            rows += self._rows(
                trajectories,
                stage=stage,
                recipe=harness,
                decoding=decoding,
                temperature=config.temperature,
                samples=config.samples,
                model=config.model,
            )
        write_learning_rows(self.out / LEARNING_FILE, rows)
        return rows

    def _same_model_rows(self, stage: str, harness: str, harnesses: list[str], model: str) -> list[dict] | None:
        """Rows of an evaluation this run already made of the same model under the same harnesses, else None
        (evaluate):
        - GSPO's or the control's: SFT's rows of the recipe, when their weights are bit-identical to the SFT model's;
        - the base model's and the memorization baseline's: another recipe's rows (neither depends on the recipe; a
          'tiny' base is built per recipe and is evaluated for each).
        Copied rows are marked `same_weights_as` (the stage, or stage-recipe, they came from)."""
        if stage in ("gspo", "control", "rft"):
            if not same_weights(model, self.model_for("sft", harness)):
                return None
            sources = [("sft", harness)]
        elif stage in SHARED_STAGES and not (stage == "base" and self.base_model == "tiny"):
            sources = [(stage, other) for other in self.config.rl_harnesses if other != harness]
        else:
            return None
        decodings = {"greedy"} | ({"sampled"} if self.sampled(stage) else set())
        wanted = {(h, d) for h in harnesses for d in decodings}
        learning = read_learning(self.out / LEARNING_FILE)
        for source, recipe in sources:
            rows = [
                r
                for r in learning
                if r["stage"] == source
                and r.get("recipe") == recipe
                and r.get("run") == self.identity["run"]
                and r["harness"] in harnesses
                and r.get("decoding") in decodings
            ]
            if {(r["harness"], r["decoding"]) for r in rows} != wanted:
                continue
            mark = source if recipe == harness else f"{source}-{recipe}"
            print(
                f"{stage}-{harness}: the same model as {mark}, under the same harnesses; its rows are {mark}'s "
                f"(same_weights_as: {mark})"
            )
            return [
                {
                    **r,
                    "stage": stage,
                    "recipe": harness,
                    "same_weights_as": mark,
                    **({"model": model} if stage != "memorize" else {}),
                }
                for r in rows
            ]
        return None

    def memorize(self, harness: str, harnesses: list[str] | None = None) -> list[dict]:
        """The memorization baseline on the held-out splits: every trained instance's teacher turns, the one whose
        instruction is nearest the episode's replayed verbatim (policy.memorize.NearestMemorizationPolicy). Played
        once, on the main rank."""
        return on_main(self._memorize, harness, harnesses)

    def _memorize(self, harness: str, harnesses: list[str] | None = None) -> list[dict]:
        from ..harness.episode import run_episode
        from ..harness.trajectory import write_jsonl
        from ..policy.memorize import NearestMemorizationPolicy

        started = time.perf_counter()
        harnesses = self.evaluated_under(harness, harnesses)
        reused = self._same_model_rows("memorize", harness, harnesses, "")
        if reused is not None:  # another recipe's replay under the same harnesses: the same episodes
            write_learning_rows(self.out / LEARNING_FILE, reused)
            self._timed(f"eval_memorize-{harness}", started)
            return reused
        trained = self.trained_instances()
        tasks = {t.id: t for t in self.training_tasks()}
        scale = self.config.sft.scales[0]
        training = [(tasks[task_id], scale, seed) for task_id in tasks for seed in sorted(trained.seeds[task_id])]
        pool = {
            t.id: t for t in select_tasks(self.config.sft.tasks_root, sorted({i.task_id for i in self.instances()}))
        }
        limits = limits_of(self.config.eval)
        rows = []
        out = self.out / "eval" / f"memorize-{harness}" / "trajectories.jsonl"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.unlink(missing_ok=True)
        from tqdm.auto import tqdm

        for played in harnesses:
            policy = NearestMemorizationPolicy(played, training)
            trajectories = []
            for inst in tqdm(self.instances(), desc=f"memorization baseline ({played})", leave=False):
                trajectory = run_episode(
                    pool[inst.task_id],
                    inst.scale,
                    inst.seed,
                    played,
                    policy,
                    limits,
                    error_mode=self.config.eval.error_mode,
                )
                write_jsonl(trajectory, out)
                trajectories.append(trajectory)
            rows += self._rows(
                trajectories,
                stage="memorize",
                recipe=harness,
                decoding="greedy",
                temperature=0.0,
                samples=1,
                model=policy.name,
            )
        write_learning_rows(self.out / LEARNING_FILE, rows)
        self._timed(f"eval_memorize-{harness}", started)
        return rows


def rft_data(samples: list[Any]) -> list[Any]:
    """What rejection-sampling fine-tuning imitates: the samples that passed (R = 1), none that errored."""
    return [t for t in samples if t.reward == 1.0 and not t.errored]


def _read_json_list(path: Path) -> list[dict]:
    return json.loads(path.read_text()) if path.exists() else []


def weights_stamp(model: str | Path) -> tuple:
    """Name, size and modification time of each weights file of a saved checkpoint: a rewritten checkpoint has another
    stamp (() for a model named, not saved here)."""
    return tuple((f.name, f.stat().st_size, f.stat().st_mtime_ns) for f in sorted(Path(model).glob("*.safetensors")))


def same_weights(a: str | Path, b: str | Path) -> bool:
    """Do two saved checkpoints (folders of .safetensors files) hold bit-identical tensors under the same names?"""
    a_files, b_files = sorted(Path(a).glob("*.safetensors")), sorted(Path(b).glob("*.safetensors"))
    if not a_files or [f.name for f in a_files] != [f.name for f in b_files]:
        return False
    import torch
    from safetensors.torch import load_file

    for fa, fb in zip(a_files, b_files):
        ta, tb = load_file(str(fa)), load_file(str(fb))
        if ta.keys() != tb.keys() or not all(torch.equal(ta[k], tb[k]) for k in ta):
            return False
    return True


def write_learning_rows(path: Path, rows: list[dict]) -> None:
    """Add rows to learning.jsonl, replacing rows of the same (stage, recipe, harness, split, decoding).

    A file never holds two runs: when its rows came from another config or commit (`run`, `commit`), it is moved
    aside to learning.<run>.<commit>.jsonl first, and the new rows start a new file."""

    def key(r: dict) -> tuple:
        return r["stage"], r.get("recipe", r["harness"]), r["harness"], r.get("split"), r.get("decoding")

    existing = read_learning(path)
    identities = {(r.get("run"), r.get("commit")) for r in existing} | {(r.get("run"), r.get("commit")) for r in rows}
    if existing and len(identities) > 1:
        run, commit = existing[0].get("run"), existing[0].get("commit")
        aside = path.with_name(f"{path.stem}.{run}.{str(commit).replace('+', '-')}{path.suffix}")
        path.rename(aside)
        print(f"{path.name}: its rows came from another run (config {run}, commit {commit}); moved to {aside.name}")
        existing = []
    new = {key(r) for r in rows}
    kept = [r for r in existing if key(r) not in new]
    path.write_text("".join(json.dumps(r) + "\n" for r in kept + rows))


def read_learning(path: str | Path) -> list[dict]:
    """The learning rows of a run folder (or of a learning.jsonl); none when it has none."""
    path = Path(path)
    if path.is_dir():
        path = path / LEARNING_FILE
    return read_json_lines(path) if path.exists() else []


def run_pipeline(config: PipelineConfig) -> dict:
    """Every stage of every recipe; returns the learning rows and the seconds of each stage."""
    recipe = Recipe(config)
    if config.check:
        recipe.check()
    else:
        recipe.instances()  # the splits are built and proven disjoint from training before any compute
    teacher = recipe.teacher()
    rows = []
    for harness in config.rl_harnesses:
        if "base" in config.stages and config.model != "tiny":
            rows += recipe.evaluate("base", harness)
        if "memorize" in config.stages:
            rows += recipe.evaluate("memorize", harness)
        if "sft" in config.stages:
            recipe.sft(harness, teacher[harness])
            rows += recipe.evaluate("sft", harness)
        if "gspo" in config.stages:
            recipe.gspo(harness)
            rows += recipe.evaluate("gspo", harness)
        if "control" in config.stages:
            recipe.control(harness, teacher[harness])
            rows += recipe.evaluate("control", harness)
        if "rft" in config.stages:
            recipe.rft(harness)
            rows += recipe.evaluate("rft", harness)
    summary = {
        "learning": rows,
        "paired": [row for harness in config.rl_harnesses for row in recipe.paired(harness)],
        "seconds": recipe.seconds,
        "total_seconds": sum(recipe.seconds.values()),
        **recipe.identity,
    }
    on_main(write_summary, recipe.out, summary)  # every rank returns once it is written (the CLI prints it)
    return summary


def write_summary(out: Path, summary: dict) -> None:
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    (out / "summary.md").write_text(
        format_summary(summary["learning"], summary["seconds"], summary.get("paired", [])) + "\n"
    )


def format_summary(rows: list[dict], seconds: dict[str, float], paired: list[dict] | None = None) -> str:
    lines = [format_learning_table(rows)]
    if paired:
        lines += ["", "What RL adds, paired on the same instances (B - A in pass rate):", "", format_paired(paired)]
    lines += [
        "",
        "Seconds: " + ", ".join(f"{k} {v:.0f}" for k, v in seconds.items()) + f"; total {sum(seconds.values()):.0f}",
    ]
    return "\n".join(lines)
