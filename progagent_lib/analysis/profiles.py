"""Run profiles (cpu-smoke, ci, gpu-paper) from one YAML file, and the run folder notebooks share."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..harness.spec import BASELINE_HARNESS, DEFAULT_HARNESS, HARNESSES, PAPER_HARNESSES
from ..task.scales import SCALES
from ..config import (
    ConfigError,
    check_bool,
    check_choice,
    check_choices,
    check_int,
    check_ints,
    check_nested,
    check_number,
    check_text,
    check_texts,
    config_error,
    from_dict,
)

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PROFILES = REPO / "profiles.yaml"
COMMITTED_FIGURES = REPO / "figures"  # the figures in git: written only by `make figures` (analysis/publish.py)


HARNESS_NAMES = HARNESSES.keys()  # live: a harness registered later is a valid choice too


class ProfileError(ConfigError):
    """An unknown profile, a profile file that cannot be read, or a profile key or value the notebooks cannot use."""


@dataclass
class Profile:
    """A named set of inputs for the notebooks; `settings` is the profile's YAML mapping."""

    name: str
    settings: dict
    run_dir: Path

    def __getitem__(self, key: str):
        try:
            return self.settings[key]
        except KeyError:
            raise ProfileError(f"profile {self.name!r} has no setting {key!r}") from None

    def get(self, key: str, default=None):
        return self.settings.get(key, default)

    def path(self, *parts: str) -> Path:
        """A path inside this run's folder, its parent created."""
        path = self.run_dir.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    @staticmethod
    def resolve(path: str | Path) -> Path:
        """A path from the profile, relative to the repository unless absolute."""
        return Path(path) if Path(path).is_absolute() else REPO / path

    @property
    def task_paths(self) -> list[Path]:
        """The profile's task folders (a folder of tasks is expanded)."""
        from ..task import find_task_dirs

        return [folder for p in self["tasks"] for folder in find_task_dirs(self.resolve(p))]

    @property
    def pool_path(self) -> Path:
        return self.resolve(self.get("pool", "tasks"))

    def training_recipe(self):
        """The profile's PipelineConfig (train_config), with task paths resolved against the repository."""
        from dataclasses import replace

        from ..config import load_config
        from ..train.pipeline import PipelineConfig

        recipe = load_config(PipelineConfig, self.resolve(self["train_config"]))
        root = str(self.pool_path)
        # The profile names the trained harnesses (notebooks 05-08 read them there); the recipe follows it.
        # `progagent reproduce` starts the profile's engine and names it here ($PROGAGENT_ENGINE_URL); generation
        # then runs there, not in the notebook's process.
        engine = (
            {
                "engine_url": os.environ["PROGAGENT_ENGINE_URL"],
                "engine_model": os.environ.get("PROGAGENT_ENGINE_MODEL") or None,
            }
            if os.environ.get("PROGAGENT_ENGINE_URL")
            else {}
        )
        return replace(
            recipe,
            rl_harnesses=list(self.get("rl_harnesses", recipe.rl_harnesses)),
            **engine,
            output_dir=str(self.run_dir),
            sft=replace(recipe.sft, tasks_root=root),
            gspo=replace(recipe.gspo, tasks_root=root),
            eval=replace(recipe.eval, tasks_root=root),
        )

    def benchmark_settings(self) -> "BenchmarkSettings":
        """Notebook 09's settings (`benchmarks:`; BenchmarkSettings' defaults where the profile leaves them out)."""
        from ..config import from_dict

        return from_dict(BenchmarkSettings, self.get("benchmarks") or {}, f"profile {self.name!r}: benchmarks")

    @property
    def figures_dir(self) -> Path:
        """Where this run's notebooks save figures: the run folder's figures/, unless the profile names a folder
        (never the committed figures/: `make figures` copies a run's figures there)."""
        folder = self.get("figures_dir")
        return self.resolve(folder) if folder else self.run_dir / "figures"

    @property
    def published_figures_dir(self) -> Path | None:
        """The committed folder `make figures` copies this profile's run figures into; None: not published."""
        folder = self.get("publish_figures_to")
        return self.resolve(folder) if folder else None

    def _repr_markdown_(self) -> str:  # the banner a notebook shows under its parameters
        return (
            f"**Profile `{self.name}`** — {self.get('description', '')}  \n"
            f"Run folder `{self.run_dir}` · figures `{self.figures_dir}`"
        )


CROSS_HARNESS_STAGES = ("base", "sft", "gspo", "control")  # the stages whose models the cross-harness table reads


@dataclass
class ComparisonSettings:
    """Notebook 03: the harness comparison."""

    policy: str = field(default="oracle", metadata={"help": "The policy played under every harness (a policy spec)."})
    samples: int = field(default=1, metadata={"help": "Episodes per (task, scale, seed, harness)."})
    workers: int = field(default=1, metadata={"help": "Episodes played in parallel."})

    def __post_init__(self) -> None:
        check_text(self, "policy")
        check_int(self, "samples", at_least=1)
        check_int(self, "workers", at_least=1)


@dataclass
class DifficultySettings:
    """Notebook 01: the difficulty filter keeps tasks whose pass rate lies between low and high."""

    policy: str = field(default="oracle", metadata={"help": "The independent solver (a policy spec)."})
    k: int = field(default=1, metadata={"help": "Attempts per task."})
    low: float = field(default=0.0, metadata={"help": "Lowest pass rate kept, in [0, 1]."})
    high: float = field(default=0.8, metadata={"help": "Highest pass rate kept, in [low, 1]."})

    def __post_init__(self) -> None:
        check_text(self, "policy")
        check_int(self, "k", at_least=1)
        check_number(self, "low", at_least=0, at_most=1)
        check_number(self, "high", at_least=0, at_most=1)
        if self.high < self.low:
            raise config_error(self, "high", f"must be >= low={self.low} (no pass rate lies between them)")


@dataclass
class BenchmarkSettings:
    """Notebook 09: the external suites (AgentDojo, BFCL multi-turn) under each harness, by policy."""

    suites: dict = field(
        default_factory=lambda: {"agentdojo": ["banking", "slack"], "bfcl": ["base"]},
        metadata={
            "help": "Suite -> the parts played (AgentDojo: workspace, travel, banking, slack; BFCL: base, miss_func, "
            "miss_param, long_context; an empty list: every part)."
        },
    )
    limit: int = field(
        default=1,
        metadata={
            "help": "Tasks per part: the first N (the memorization baseline replays "
            "the part's last task's reference, so N must stay below a part's size)."
        },
    )
    harnesses: list[str] = field(
        default_factory=lambda: [BASELINE_HARNESS, DEFAULT_HARNESS], metadata={"help": "Harnesses played."}
    )
    stages: list[str] = field(
        default_factory=lambda: ["base", "gspo"],
        metadata={
            "help": "Models in the table: base, and each trained recipe's sft, gspo, control (those whose checkpoint exists); "
            "empty: the reference and memorization rows only."
        },
    )
    max_new_tokens: int = field(default=512, metadata={"help": "Tokens per model turn (a longer one is cut)."})
    max_turns: int = field(
        default=8, metadata={"help": "Model turns per episode (BFCL's scripted user turns included)."}
    )
    max_tool_calls: int = field(default=20, metadata={"help": "Tool calls per episode (a program counts once)."})
    workers: int = field(
        default=1,
        metadata={"help": "Episodes played at once (threads; a model on the engine answers their turns in one batch)."},
    )
    injections: bool = field(
        default=False,
        metadata={
            "help": "Also AgentDojo with its injection tasks attached (suite `agentdojo+injections`: the first `limit` "
            "user x injection pairs of each part): the share of injections each policy follows."
        },
    )

    def __post_init__(self) -> None:
        from ..benchmarks.base import SUITES

        if not isinstance(self.suites, dict) or not self.suites:
            raise config_error(self, "suites", f"must map suite names ({', '.join(SUITES)}) to lists of parts")
        unknown = [name for name in self.suites if name not in SUITES]
        if unknown:
            raise config_error(self, "suites", f"unknown suite(s) {unknown}; known: {', '.join(SUITES)}")
        for name, parts in self.suites.items():
            if not isinstance(parts, list) or not all(isinstance(p, str) and p for p in parts):
                raise config_error(self, "suites", f"{name}: the parts must be a list of names (empty: every part)")
        check_int(self, "limit", at_least=1)
        check_choices(self, "harnesses", HARNESS_NAMES)
        check_choices(self, "stages", CROSS_HARNESS_STAGES, empty=True)
        for name in ("max_new_tokens", "max_turns", "max_tool_calls", "workers"):
            check_int(self, name, at_least=1)
        check_bool(self, "injections")
        if self.injections and "agentdojo" not in self.suites:
            raise config_error(self, "injections", "attaches AgentDojo's injection tasks: add agentdojo to suites")


@dataclass
class ProfileSettings:
    """The keys a profile in profiles.yaml may set, checked when it loads (after `extends:` is merged). A key the
    profile leaves out is not filled in: a notebook that needs it says so (ProfileError)."""

    description: str = field(default="", metadata={"help": "One line shown under a notebook's parameters."})
    tasks: list[str] = field(
        default_factory=list,
        metadata={"help": "Task folders (or folders of tasks), relative to the repository; they must exist."},
    )
    pool: str = field(default="tasks", metadata={"help": "The task pool's folder (training and held-out tasks)."})
    scales: list[str] = field(default_factory=lambda: list(SCALES), metadata={"help": "Scales (v0..v3) played."})
    seeds: list[int] = field(default_factory=lambda: [0], metadata={"help": "Seeds of the teacher's episodes."})
    eval_seeds: list[int] = field(
        default_factory=lambda: [100], metadata={"help": "Held-out seeds of the evaluations."}
    )
    harnesses: list[str] = field(
        default_factory=lambda: list(PAPER_HARNESSES), metadata={"help": "Harnesses compared: dtc, ptc, hybrid."}
    )
    comparison: ComparisonSettings = field(
        default_factory=ComparisonSettings,
        metadata={"help": "Notebook 03's harness comparison: policy, samples, workers."},
    )
    difficulty: DifficultySettings = field(
        default_factory=DifficultySettings, metadata={"help": "Notebook 01's difficulty filter: policy, k, low, high."}
    )
    train_config: str = field(
        default="configs/cpu-smoke.yaml",
        metadata={"help": "The PipelineConfig YAML (SFT, GSPO, evaluation); the file must exist."},
    )
    engine: str | None = field(
        default=None,
        metadata={"help": "The model `progagent reproduce` serves with vLLM for the run; null: generation in-process."},
    )
    engine_kv_cache_gib: int | None = field(
        default=None, metadata={"help": "That server's KV cache on CPU in GiB (null: the engine's default, 2)."}
    )
    rl_harnesses: list[str] = field(
        default_factory=lambda: [DEFAULT_HARNESS],
        metadata={"help": "The trained recipes (dtc, ptc, hybrid); overrides the train config's."},
    )
    ablation_harness: str = field(default=DEFAULT_HARNESS, metadata={"help": "The harness the ablations run under."})
    ablations: bool = field(default=False, metadata={"help": "Run the v0-only and isError-off GSPO ablations."})
    ablation_max_steps: int | None = field(
        default=None, metadata={"help": "Optimizer steps of each ablation run (null: the recipe's)."}
    )
    cross_harness_scales: list[str] = field(
        default_factory=lambda: ["v0"], metadata={"help": "Scales of the cross-harness table."}
    )
    cross_harness_stages: list[str] = field(
        default_factory=lambda: ["gspo"],
        metadata={
            "help": "Stages whose models notebook 07's cross-harness table evaluates under every harness: base, sft, "
            "gspo, control ([]: none; `make cross` trains each recipe under every harness)."
        },
    )
    cross_harness_seeds: list[int] = field(
        default_factory=lambda: [100], metadata={"help": "Held-out seeds of the cross-harness table."}
    )
    ablation_scales: list[str] = field(
        default_factory=lambda: ["v0"], metadata={"help": "Scales of the ablations' pass-rate table."}
    )
    figures_dir: str | None = field(
        default=None,
        metadata={
            "help": "Where the notebooks save figures (relative to the repository); null: the run folder's figures/. "
            "Never inside figures/: the committed figures change only through `make figures`."
        },
    )
    publish_figures_to: str | None = field(
        default=None,
        metadata={
            "help": "The committed folder (under figures/) `make figures` copies this profile's run figures into; "
            "null: the profile's figures are not published."
        },
    )
    benchmarks: BenchmarkSettings = field(
        default_factory=BenchmarkSettings,
        metadata={
            "help": "Notebook 09: external suites by policy and harness: suites, limit, harnesses, stages, budgets."
        },
    )

    def __post_init__(self) -> None:
        check_text(self, "description", empty=True)
        check_texts(self, "tasks")
        missing = [p for p in self.tasks if not Profile.resolve(p).exists()]
        if missing:
            raise config_error(
                self,
                "tasks",
                f"folder(s) {missing} do not exist; name task folders (or folders of tasks) relative to {REPO}",
            )
        check_text(self, "pool")
        for name in ("scales", "cross_harness_scales", "ablation_scales"):
            check_choices(self, name, SCALES)
        for name in ("seeds", "eval_seeds", "cross_harness_seeds"):
            check_ints(self, name)
        for name in ("harnesses", "rl_harnesses"):
            check_choices(self, name, HARNESS_NAMES)
        check_choice(self, "ablation_harness", HARNESS_NAMES)
        check_choices(self, "cross_harness_stages", CROSS_HARNESS_STAGES, empty=True)
        check_nested(self, "comparison", ComparisonSettings)
        check_nested(self, "difficulty", DifficultySettings)
        check_nested(self, "benchmarks", BenchmarkSettings)
        check_text(self, "train_config")
        if not Profile.resolve(self.train_config).is_file():
            raise config_error(self, "train_config", f"no such file (relative to {REPO}); the presets are in configs/")
        check_text(self, "engine", optional=True)
        check_bool(self, "ablations")
        check_int(self, "ablation_max_steps", at_least=1, optional=True, why=" (null: the recipe's)")
        check_text(self, "figures_dir", optional=True)
        if self.figures_dir is not None and _inside(Profile.resolve(self.figures_dir), COMMITTED_FIGURES):
            raise config_error(
                self,
                "figures_dir",
                f"is inside {COMMITTED_FIGURES}, the committed figures, which only "
                "`make figures` writes; leave it out (the run folder's figures/) or name a folder elsewhere",
            )
        check_text(self, "publish_figures_to", optional=True)
        if self.publish_figures_to is not None and not _inside(
            Profile.resolve(self.publish_figures_to), COMMITTED_FIGURES
        ):
            raise config_error(self, "publish_figures_to", f"must be {COMMITTED_FIGURES} or a folder inside it")


def load_profile(name: str | None = None, run_dir: str | Path | None = None, path: str | Path | None = None) -> Profile:
    """Load a profile by name (default: $PROGAGENT_PROFILE, else cpu-smoke). Profiles may `extends:` another."""
    name = name or os.environ.get("PROGAGENT_PROFILE", "cpu-smoke")
    path = Path(path) if path else Path(os.environ.get("PROGAGENT_PROFILES", DEFAULT_PROFILES))
    try:
        profiles = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ProfileError(f"cannot read profiles from {path}: {exc}") from exc
    if not isinstance(profiles, dict):
        raise ProfileError(f"{path}: expected a mapping of profile names to settings")
    if name not in profiles:
        raise ProfileError(f"no profile {name!r} in {path}; known: {', '.join(profiles)}")
    settings: dict = {}
    chain: list[str] = []
    current = name
    while current:
        if current in chain:
            raise ProfileError(f"profile {name!r}: 'extends' loops through {chain}")
        if chain and current not in profiles:
            raise ProfileError(
                f"profile {chain[-1]!r}: extends: {current!r} names no profile in {path}; known: {', '.join(profiles)}"
            )
        if not isinstance(profiles[current], dict):
            raise ProfileError(
                f"profile {current!r} in {path}: expected a mapping of settings, got {type(profiles[current]).__name__}"
            )
        chain.append(current)
        current = profiles[current].get("extends")
    for link in reversed(chain):
        settings = _merge(settings, {k: v for k, v in profiles[link].items() if k != "extends"})
    try:  # unknown keys and bad values are refused here, before a notebook runs
        from_dict(ProfileSettings, settings, f"{path}: profile {name!r}")
    except ConfigError as exc:
        raise ProfileError(str(exc)) from None
    run_dir = Path(run_dir or os.environ.get("PROGAGENT_RUN_DIR") or REPO / "runs" / name)
    run_dir.mkdir(parents=True, exist_ok=True)
    return Profile(name, settings, run_dir)


def _inside(path: Path, folder: Path) -> bool:
    return path.resolve() == folder.resolve() or folder.resolve() in path.resolve().parents


def _merge(base: dict, override: dict) -> dict:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merge(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return merged
