"""Run profiles (cpu-smoke, ci, gpu-paper) from one YAML file, and the run folder notebooks share."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
DEFAULT_PROFILES = REPO / "profiles.yaml"


class ProfileError(Exception):
    """An unknown profile, or a profile file that cannot be read."""


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

        from ..train.config import load_config
        from ..train.pipeline import PipelineConfig

        recipe = load_config(PipelineConfig, self.resolve(self["train_config"]))
        root = str(self.pool_path)
        # The profile names the trained harnesses (notebooks 05-08 read them there); the recipe follows it.
        # `progagent reproduce` starts the profile's engine and names it here ($PROGAGENT_ENGINE_URL); generation
        # then runs there, not in the notebook's process.
        engine = {"engine_url": os.environ["PROGAGENT_ENGINE_URL"],
                  "engine_model": os.environ.get("PROGAGENT_ENGINE_MODEL") or None} \
            if os.environ.get("PROGAGENT_ENGINE_URL") else {}
        return replace(recipe, rl_harnesses=list(self.get("rl_harnesses", recipe.rl_harnesses)), **engine,
                       output_dir=str(self.run_dir), sft=replace(recipe.sft, tasks_root=root),
                       gspo=replace(recipe.gspo, tasks_root=root), eval=replace(recipe.eval, tasks_root=root))

    @property
    def figures_dir(self) -> Path:
        return self.resolve(self.get("figures_dir", "figures"))

    def _repr_markdown_(self) -> str:  # the banner a notebook shows under its parameters
        return (f"**Profile `{self.name}`** — {self.get('description', '')}  \n"
                f"Run folder `{self.run_dir}` · figures `{self.figures_dir}`")


def load_profile(name: str | None = None, run_dir: str | Path | None = None, path: str | Path | None = None) -> Profile:
    """Load a profile by name (default: $PROGAGENT_PROFILE, else cpu-smoke). Profiles may `extends:` another."""
    name = name or os.environ.get("PROGAGENT_PROFILE", "cpu-smoke")
    path = Path(path or os.environ.get("PROGAGENT_PROFILES", DEFAULT_PROFILES))
    try:
        profiles = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ProfileError(f"cannot read profiles from {path}: {exc}") from exc
    if name not in profiles:
        raise ProfileError(f"no profile {name!r} in {path}; known: {', '.join(profiles)}")
    settings: dict = {}
    chain, current = [], name
    while current:
        if current in chain:
            raise ProfileError(f"profile {name!r}: 'extends' loops through {chain}")
        chain.append(current)
        current = profiles[current].get("extends")
    for link in reversed(chain):
        settings = _merge(settings, {k: v for k, v in profiles[link].items() if k != "extends"})
    run_dir = Path(run_dir or os.environ.get("PROGAGENT_RUN_DIR") or REPO / "runs" / name)
    run_dir.mkdir(parents=True, exist_ok=True)
    return Profile(name, settings, run_dir)


def _merge(base: dict, override: dict) -> dict:
    merged = dict(base)
    for key, value in override.items():
        merged[key] = _merge(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) else value
    return merged
