"""Loading a task folder, building its environment state per scale, and starting episodes."""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import json
import os
import random
import re
import shutil
import sqlite3
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Callable

from ..cache import build_once, cache_root
from .environment import WORKSPACE_MAX_FILES, WORKSPACE_QUOTA, Environment
from .installed_pool import seal_installed_pool
from .safe_fs import mount_quota, unmount
from .scales import FILE_MULTIPLIER, ROW_MULTIPLIER, check_scale
from .tools import ToolDefinitionError

DB_PAGE_SIZE = 512
STATE_FORMAT = 2  # bump when the way states are built changes, so cached states are rebuilt
TASK_FILES = ("task.toml", "prompt.md", "generator.py", "environment.py", "oracle.py")
NEAR_MISS_FILE = "near_miss.py"  # optional: a plausible wrong solution, which certification checks scores R = 0


class TaskLoadError(Exception):
    """A task folder cannot be loaded; the message names the task, the file and the problem."""


class GenerationError(Exception):
    """A task's generator raised or produced an unusable state."""


def episodes_root() -> Path:
    """Where episodes' private copies live (override with PROGAGENT_EPISODES)."""
    root = Path(os.environ.get("PROGAGENT_EPISODES", Path(tempfile.gettempdir()) / "progagent-episodes"))
    root.mkdir(parents=True, exist_ok=True)
    return root


def default_workspace_quota() -> int | None:
    """Bytes an episode's workspace may hold: PROGAGENT_WORKSPACE_QUOTA (bytes; 0 turns it off) or 256 MiB."""
    value = os.environ.get("PROGAGENT_WORKSPACE_QUOTA")
    if value is None or not value.strip():
        return WORKSPACE_QUOTA
    try:
        quota = int(value)
    except ValueError:
        raise ValueError(
            f"PROGAGENT_WORKSPACE_QUOTA must be a number of bytes (0 to turn the quota off), got {value!r}"
        ) from None
    return quota if quota > 0 else None


_EPISODE_OWNER = re.compile(r"-p(\d+)-[^-]+$")
_swept_episodes = False


def pid_alive(pid: int) -> bool:
    """Whether a process of this host with that pid exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_episode_copies(root: Path | None = None) -> list[Path]:
    """Remove episode copies left by processes that died without closing them (once per process).

    An episode folder carries its creator's pid (`...-p<pid>-...`); one whose creator is gone is
    unmounted (its workspace quota) and deleted. Returns what was removed.
    """
    global _swept_episodes
    if root is None:
        if _swept_episodes:
            return []
        _swept_episodes = True
        root = episodes_root()
    removed = []
    for path in root.iterdir():
        owner = _EPISODE_OWNER.search(path.name)
        if owner is None or not path.is_dir() or pid_alive(int(owner.group(1))):
            continue
        workspace = path / "workspace"
        if os.path.ismount(workspace):
            unmount(workspace)
        if os.path.ismount(workspace):  # never delete through a mount
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


@dataclass
class GenContext:
    """What a generator receives: where to write and how big to make things."""

    db: sqlite3.Connection
    workspace: Path
    scale: str
    seed: int
    rng: random.Random
    config: dict = field(default_factory=dict)
    params: dict = field(default_factory=dict)  # the instance's parameters (generator.params), the same at every scale

    def rows(self, n: int) -> int:
        """n database rows at v0, scaled ×1/×2/×4/×8."""
        return int(n) * ROW_MULTIPLIER[self.scale]

    def files(self, n: int) -> int:
        """n workspace files at v0, scaled ×1/×2/×3/×4."""
        return int(n) * FILE_MULTIPLIER[self.scale]

    def size(self, name: str) -> int:
        """The scaled size of a table or file group declared in task.toml ([tables] / [files])."""
        tables = self.config.get("tables", {})
        files = self.config.get("files", {})
        if name in tables:
            return self.rows(tables[name])
        if name in files:
            return self.files(files[name])
        raise KeyError(f"{name!r} is declared in neither [tables] nor [files] of task.toml")

    def facts(self, **values: Any) -> None:
        """Record values for the verifier alone (`Environment.facts` reads them back): the `_verifier_facts` table, as
        JSON, which no tool shows and no export ships. Use it only for what the oracle's end state cannot say."""
        self.db.execute("CREATE TABLE IF NOT EXISTS _verifier_facts (key TEXT PRIMARY KEY, value TEXT)")
        self.db.executemany(
            "INSERT INTO _verifier_facts VALUES (?, ?)", [(key, json.dumps(value)) for key, value in values.items()]
        )

    def choices(self, name: str) -> list:
        """The values task.toml `[params]` lists for parameter `name` (for generators that also draw from them)."""
        return list(self.config["params"][name])

    def write(self, path: str, text: str) -> Path:
        """Write a workspace file at `path` (relative, folders made as needed); returns where it went."""
        target = self.workspace / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
        return target


def _seed_for(task_id: str, seed: int) -> int:
    return int.from_bytes(hashlib.sha256(f"{task_id}:{seed}".encode()).digest()[:8], "big")


class ParamContext:
    """What `params(ctx)` receives: the seed and a random generator seeded by (task, seed) alone.

    It has no scale, database or workspace: an instance's parameters are the same at every scale, so the
    instruction and the reference program of (task, seed) never change with the scale.
    """

    def __init__(self, task_id: str, seed: int, config: dict):
        self.task_id, self.seed, self.config = task_id, seed, config
        # A stream of its own: drawing parameters does not move the generator's draws (ctx.rng).
        self.rng = random.Random(_seed_for(task_id + "#params", seed))

    def __getattr__(self, name: str):
        if name in ("scale", "db", "workspace", "rows", "files", "size"):
            raise AttributeError(
                f"params(ctx) must not depend on the scale or the state (it read ctx.{name}): an instance's "
                "parameters are drawn for the seed alone, the same at v0..v3"
            )
        raise AttributeError(name)


def params_from_toml(choices: dict) -> Callable[[ParamContext], dict]:
    """`params(ctx)` of a task.toml `[params]` table: each name draws one of its listed values, in the order written.

    `excluded_category = ["pantry", "frozen"]` is `ctx.rng.choice(["pantry", "frozen"])`, so a table and the function
    it replaces draw the same values for every seed.
    """

    def params(ctx: ParamContext) -> dict:
        return {name: ctx.rng.choice(values) for name, values in choices.items()}

    return params


def _check_params_table(task_id: str, choices: object) -> dict:
    if not isinstance(choices, dict) or not choices:
        raise TaskLoadError(f"task {task_id!r} (task.toml): [params] must map parameter names to lists of values")
    for name, values in choices.items():
        if not isinstance(values, list) or not values:
            raise TaskLoadError(
                f"task {task_id!r} (task.toml): [params] {name} must be a non-empty list of the values it may take, "
                f"got {values!r}"
            )
    return choices


PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
PARAM_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def prompt_placeholders(prompt: str) -> list[str]:
    """The `{name}` placeholders of an instruction, in order of first use (`{{` and `}}` are literal braces)."""
    names = [m.group(1) for m in PLACEHOLDER.finditer(prompt) if m.group(1) is not None]
    return list(dict.fromkeys(names))


def format_param(value: Any) -> str:
    """How a parameter's value reads in the instruction: lists as `a, b and c`, numbers and text as themselves."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        items = [format_param(v) for v in value]
        return items[0] if len(items) == 1 else (", ".join(items[:-1]) + " and " + items[-1]) if items else "none"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value)


def render_instruction(prompt: str, params: dict) -> str:
    """The instruction with each `{name}` replaced by its parameter's value (`format_param`)."""

    def replace(match: re.Match) -> str:
        if match.group(1) is None:
            return match.group(0)[0]
        return format_param(params[match.group(1)])

    return PLACEHOLDER.sub(replace, prompt)


def _load_module(task_id: str, path: Path) -> ModuleType:
    name = "progagent_tasks." + task_id.replace("/", ".").replace("-", "_") + "." + path.stem
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None  # a .py file always has both
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except ToolDefinitionError as exc:
        raise TaskLoadError(f"task {task_id!r} ({path.name}): {exc}") from None
    except Exception as exc:
        raise TaskLoadError(f"task {task_id!r} ({path.name}): import failed: {type(exc).__name__}: {exc}") from exc
    return module


def state_fingerprint(db_path: Path, workspace: Path) -> str:
    """Hash of a state's database content (SQL dump) and workspace files (paths and bytes)."""
    digest = hashlib.sha256()
    con = sqlite3.connect(db_path)
    try:
        for line in con.iterdump():
            digest.update(line.encode())
    finally:
        con.close()
    for path in sorted(workspace.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(workspace)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


class Task:
    """One task folder in the native format (see DESIGN.md section 3)."""

    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()
        if not self.root.is_dir():
            raise TaskLoadError(f"task folder {str(root)!r} does not exist")
        missing = [f for f in TASK_FILES if not (self.root / f).is_file()]
        label = str(root)
        if missing:
            raise TaskLoadError(f"task {label!r}: missing file(s) {', '.join(missing)}")
        toml_bytes = (self.root / "task.toml").read_bytes()
        digest = hashlib.sha256(f"state-format:{STATE_FORMAT}:page-size:{DB_PAGE_SIZE}".encode())
        digest.update(toml_bytes)
        digest.update((self.root / "generator.py").read_bytes())
        self._fingerprint = digest.hexdigest()[:16]
        self._sources = {name: (self.root / name).read_bytes() for name in ("oracle.py", "environment.py")}
        try:
            self.config = tomllib.loads(toml_bytes.decode())
        except tomllib.TOMLDecodeError as exc:
            raise TaskLoadError(f"task {label!r} (task.toml): not valid TOML: {exc}") from None
        for key in ("id", "domain", "title"):
            if not isinstance(self.config.get(key), str) or not self.config[key].strip():
                raise TaskLoadError(f"task {label!r} (task.toml): required string field {key!r} is missing")
        self.id: str = self.config["id"]
        self.domain: str = self.config["domain"]
        self.subcategory: str = self.config.get("subcategory", "")
        self.title: str = self.config["title"]
        self.limits: dict = self.config.get("limits", {})
        for section in ("tables", "files"):
            values = self.config.get(section, {})
            if not isinstance(values, dict) or not all(isinstance(v, int) and v > 0 for v in values.values()):
                raise TaskLoadError(f"task {self.id!r} (task.toml): [{section}] must map names to positive integers")
        self.prompt: str = (self.root / "prompt.md").read_text().strip()
        if not self.prompt:
            raise TaskLoadError(f"task {self.id!r} (prompt.md): the instruction is empty")
        self._generator: Callable | None = None
        self._params_fn: Callable | None = None
        self._params_cache: dict[int, dict] = {}
        self._env_class: type[Environment] | None = None
        self._solve: Callable | None = None
        self._near_miss: Callable | None = None
        # Load eagerly so that a broken tool definition, parameter or placeholder is reported at load time.
        self.env_class  # noqa: B018 - the property loads environment.py, so a broken tool is reported now
        self.param_names: tuple[str, ...] = self._check_params()

    @property
    def parametrised(self) -> bool:
        """Whether the task draws instance parameters (generator.py defines params(ctx))."""
        return bool(self.param_names)

    def __repr__(self) -> str:
        return f"Task({self.id!r})"

    # --- the three code files ------------------------------------------------------------------
    @property
    def env_class(self) -> type[Environment]:
        if self._env_class is None:
            module = _load_module(self.id, self.root / "environment.py")
            classes = [
                v
                for v in vars(module).values()
                if isinstance(v, type)
                and issubclass(v, Environment)
                and v is not Environment
                and v.__module__ == module.__name__
            ]
            if len(classes) != 1:
                raise TaskLoadError(
                    f"task {self.id!r} (environment.py): expected exactly one Environment subclass, found {len(classes)}"
                )
            if not classes[0].tool_specs:
                raise TaskLoadError(f"task {self.id!r} (environment.py): the environment defines no @tool methods")
            if "criteria" in getattr(classes[0], "__abstractmethods__", ()):
                raise TaskLoadError(
                    f"task {self.id!r} (environment.py): {classes[0].__name__} defines no criteria(final_response), "
                    "so nothing can verify an episode"
                )
            self._env_class = classes[0]
        return self._env_class

    @property
    def generator(self) -> Callable:
        if self._generator is None:
            module = _load_module(self.id, self.root / "generator.py")
            if not callable(getattr(module, "generate", None)):
                raise TaskLoadError(f"task {self.id!r} (generator.py): no function generate(ctx)")
            params = getattr(module, "params", None)
            if params is not None and not callable(params):
                raise TaskLoadError(f"task {self.id!r} (generator.py): `params` must be a function params(ctx) -> dict")
            if "params" in self.config:
                if params is not None:
                    raise TaskLoadError(
                        f"task {self.id!r}: parameters are drawn by both task.toml [params] and generator.py "
                        "params(ctx); keep one"
                    )
                params = params_from_toml(_check_params_table(self.id, self.config["params"]))
            self._generator, self._params_fn = module.generate, params
        return self._generator

    # --- instance parameters ---------------------------------------------------------------------
    def _draw_params(self, seed: int) -> dict:
        where = f"task {self.id!r} (generator.py params, seed {seed})"
        assert self._params_fn is not None  # its callers return {} for a task without params(ctx)
        try:
            drawn = self._params_fn(ParamContext(self.id, seed, self.config))
        except AttributeError as exc:
            raise TaskLoadError(f"{where}: {exc}") from None
        except Exception as exc:
            raise TaskLoadError(f"{where}: params(ctx) raised {type(exc).__name__}: {exc}") from exc
        if not isinstance(drawn, dict) or not drawn:
            raise TaskLoadError(
                f"{where}: params(ctx) must return a non-empty dict of name -> value, got {type(drawn).__name__}"
            )
        for name, value in drawn.items():
            if not isinstance(name, str) or not PARAM_NAME.match(name):
                raise TaskLoadError(f"{where}: parameter name {name!r} is not a Python identifier")
            try:
                same = json.loads(json.dumps(value, allow_nan=False)) == value
            except (TypeError, ValueError):
                same = False
            if not same:
                raise TaskLoadError(
                    f"{where}: parameter {name!r} = {value!r} is not a JSON value (str, int, float, bool, "
                    "None, or lists and dicts of them, with string keys and no tuples)"
                )
        return drawn

    def params_for(self, seed: int) -> dict:
        """The instance parameters of `seed` (the same at every scale); {} for a task without parameters."""
        self.generator  # noqa: B018 - the property loads generator.py and its params(ctx)
        if self._params_fn is None:
            return {}
        seed = int(seed)
        if seed not in self._params_cache:
            drawn = self._draw_params(seed)
            if self.param_names and tuple(drawn) != self.param_names:
                raise TaskLoadError(
                    f"task {self.id!r} (generator.py params): seed {seed} drew the parameters "
                    f"{sorted(drawn)}, seed 0 drew {sorted(self.param_names)}: every seed must draw the same names"
                )
            again = self._draw_params(seed)
            changed = sorted(k for k in drawn if again.get(k) != drawn[k])
            if changed:
                raise TaskLoadError(
                    f"task {self.id!r} (generator.py params): not deterministic: parameter(s) {changed} came out "
                    f"differently for the same seed {seed}; draw only from ctx.rng"
                )
            self._params_cache[seed] = drawn
        return dict(self._params_cache[seed])

    def _check_params(self) -> tuple[str, ...]:
        """Load-time checks: placeholders and parameters match one to one, the oracle takes the parameters."""
        used = prompt_placeholders(self.prompt)
        bad = [u for u in used if not PARAM_NAME.match(u)]
        if bad:
            raise TaskLoadError(
                f"task {self.id!r} (prompt.md): placeholder {{{bad[0]}}} is not a parameter name "
                "(write literal braces as {{ and }})"
            )
        self.generator  # noqa: B018 - the property loads generator.py and its params(ctx)
        if self._params_fn is None:
            if used:
                raise TaskLoadError(
                    f"task {self.id!r} (prompt.md): placeholder(s) {', '.join('{%s}' % u for u in used)} but "
                    "neither task.toml [params] nor generator.py params(ctx) draws parameters"
                )
            return ()
        self.param_names = ()  # no names to compare the first draw with yet
        names = tuple(self.params_for(0))  # drawn twice: seed 0 is checked for determinism here
        self.param_names = names
        missing = [u for u in used if u not in names]
        if missing:
            raise TaskLoadError(
                f"task {self.id!r} (prompt.md): placeholder {{{missing[0]}}} names no parameter; "
                f"params(ctx) draws {list(names)}"
            )
        unused = [n for n in names if n not in used]
        if unused:
            raise TaskLoadError(
                f"task {self.id!r} (prompt.md): parameter {unused[0]!r} is never mentioned in the instruction; "
                f"write it as {{{unused[0]}}} where the request states it"
            )
        signature = inspect.signature(self.solve)
        accepts_all = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values())
        absent = [n for n in names if n not in signature.parameters]
        if absent and not accepts_all:
            raise TaskLoadError(
                f"task {self.id!r} (oracle.py): solve(tools, ...) does not take the parameter(s) {absent}; "
                "write solve(tools, " + ", ".join(names) + ")"
            )
        return names

    def instruction(self, seed_or_params: int | dict = 0) -> str:
        """The rendered instruction of an instance: `instruction(seed)` or `instruction(params)`."""
        params = self.params_for(seed_or_params) if isinstance(seed_or_params, int) else seed_or_params
        missing = [n for n in self.param_names if n not in params]
        if missing:
            raise KeyError(f"task {self.id!r}: no value for parameter(s) {missing}")
        return render_instruction(self.prompt, params)

    @property
    def solve(self) -> Callable:
        if self._solve is None:
            module = _load_module(self.id, self.root / "oracle.py")
            if not callable(getattr(module, "solve", None)):
                raise TaskLoadError(f"task {self.id!r} (oracle.py): no function solve(tools)")
            self._solve = module.solve
        return self._solve

    def oracle(self, tools: Any, params: dict | None = None) -> str:
        """Run the reference solution against `tools`; returns its final response.

        `params`: the instance's parameters; by default those of the environment behind `env.tools`.
        """
        if params is None:
            env = getattr(tools, "_env", None)
            params = dict(getattr(env, "params", None) or {})
        missing = [n for n in self.param_names if n not in params]
        if missing:
            raise TypeError(
                f"task {self.id!r} draws parameters {list(self.param_names)}: call oracle(tools, params=env.params) "
                f"(missing {missing})"
            )
        return self.solve(tools, **params)

    @property
    def has_near_miss(self) -> bool:
        return (self.root / NEAR_MISS_FILE).is_file()

    def near_miss(self, tools: Any, params: dict | None = None) -> str:
        """Run the task's near miss (near_miss.py) against `tools`; returns its final response.

        near_miss.py either defines `solve(tools, **params)`, a whole wrong program, or `flip = {...}`: keyword
        arguments that turn the oracle into the plausible mistake (`solve(tools, **params, honour_hold=False)`).
        """
        if self._near_miss is None:
            self._near_miss = self._load_near_miss()
        if params is None:
            params = dict(getattr(getattr(tools, "_env", None), "params", None) or {})
        return self._near_miss(tools, **params)

    def _load_near_miss(self) -> Callable:
        where = f"task {self.id!r} ({NEAR_MISS_FILE})"
        if not self.has_near_miss:
            raise TaskLoadError(f"{where}: the task has no near miss")
        module = _load_module(self.id, self.root / NEAR_MISS_FILE)
        if callable(getattr(module, "solve", None)):
            return module.solve
        flip = getattr(module, "flip", None)
        if not isinstance(flip, dict) or not flip:
            raise TaskLoadError(
                f"{where}: define solve(tools, **params) or flip = {{...}} (the oracle's keyword "
                "arguments that make the mistake)"
            )
        parameters = inspect.signature(self.solve).parameters
        unknown = [k for k in flip if k not in parameters or k in self.param_names]
        if unknown:
            raise TaskLoadError(
                f"{where}: flip names {unknown}, which are not keyword arguments of the oracle's solve() "
                "beyond the instance parameters"
            )
        return lambda tools, **params: self.solve(tools, **params, **flip)

    def tool_schemas(self) -> list[dict]:
        return [spec.openai_schema() for spec in self.env_class.tool_specs.values()]

    # --- environment state -----------------------------------------------------------------------
    def code_fingerprint(self) -> str:
        """Identifies a built state: the task's generator and config as loaded, and how the library builds states.

        Computed from the bytes read at load time, so an edit made after loading cannot file a state built
        from the old code under the new code's key.
        """
        return self._fingerprint

    def source_bytes(self, name: str) -> bytes:
        """The bytes of oracle.py or environment.py as they were when the task was loaded (they key its references)."""
        return self._sources[name]

    def reference_dir(self, scale: str, seed: int) -> Path:
        """The reference state of (scale, seed): what the oracle leaves (`reference.reference_dir`), built on first use."""
        from .reference import reference_dir

        return reference_dir(self, scale, seed)

    def generate_into(self, target: Path, scale: str, seed: int) -> None:
        """Run the generator into an empty folder `target` (data.db + workspace/)."""
        check_scale(scale)
        target.mkdir(parents=True, exist_ok=True)
        workspace = target / "workspace"
        workspace.mkdir()
        con = sqlite3.connect(target / "data.db")
        # Small pages: a table's fixed cost is one page, so with 4 KB pages the empty tables of a v0
        # database would outweigh its rows and hide the x1/x2/x4/x8 growth of the data.
        con.execute(f"PRAGMA page_size = {DB_PAGE_SIZE}")
        ctx = GenContext(
            con, workspace, scale, seed, random.Random(_seed_for(self.id, seed)), self.config, self.params_for(seed)
        )
        try:
            self.generator(ctx)
            con.commit()
            con.execute("VACUUM")  # drop free pages left by the generator, so the file size is the data's
        except TaskLoadError:
            raise
        except Exception as exc:
            raise GenerationError(
                f"task {self.id!r} (generator.py): generate() raised {type(exc).__name__}: {exc} at scale {scale}, seed {seed}"
            ) from exc
        finally:
            con.close()

    def state_dir(self, scale: str, seed: int) -> Path:
        """The cached state for (scale, seed), built on first use. Never modified by episodes."""
        check_scale(scale)

        def build(staging: Path) -> str:
            self.generate_into(staging, scale, seed)
            return state_fingerprint(staging / "data.db", staging / "workspace")

        return build_once(cache_root() / "envs" / self.id / self.code_fingerprint() / f"{scale}-seed{seed}", build)

    def instantiate(
        self, scale: str = "v0", seed: int = 0, *, workspace_quota: int | None | str = "default"
    ) -> Environment:
        """A fresh Environment on a private copy of the (scale, seed) state.

        `workspace_quota`: bytes the episode's workspace may hold (default: `default_workspace_quota()`,
        256 MiB; None: no quota). Where the host may mount (root), the workspace is a tmpfs of that
        size, which bounds the kernel's own writes too; elsewhere only the file tools check it.
        """
        quota = default_workspace_quota() if workspace_quota == "default" else workspace_quota
        if quota is not None and (not isinstance(quota, int) or quota <= 0):
            raise ValueError(f"workspace_quota must be a positive number of bytes or None, got {quota!r}")
        source = self.state_dir(scale, seed)
        seal_installed_pool()  # before any episode: an installed pool's oracles out of every sandbox's reach
        sweep_episode_copies()
        episode = Path(
            tempfile.mkdtemp(prefix=f"{self.id.replace('/', '_')}-{scale}-p{os.getpid()}-", dir=episodes_root())
        )
        workspace = episode / "workspace"
        workspace.mkdir()
        mounted = quota is not None and mount_quota(workspace, quota, WORKSPACE_MAX_FILES)
        try:
            shutil.copy2(source / "data.db", episode / "data.db")
            shutil.copytree(source / "workspace", workspace, dirs_exist_ok=True)
            env = self.env_class(
                episode / "data.db",
                workspace,
                task=self,
                episode_dir=episode,
                workspace_quota=quota,
                quota_mounted=mounted,
            )
        except BaseException:
            if mounted:
                unmount(workspace)
            shutil.rmtree(episode, ignore_errors=True)
            raise
        env.scale, env.seed = scale, seed
        env.params = self.params_for(seed)
        env.instruction = self.instruction(env.params)
        return env


def load_task(path: str | Path) -> Task:
    """Load one task folder: a path, or a task id under the pool (`retail/restock_orders`; `tasks/retail/...` names the
    installed pool's copy outside a checkout, see task.ids)."""
    return Task(path if Path(path).is_dir() else _in_pool(path, single=True))


def find_task_dirs(root: str | Path) -> list[Path]:
    """Every folder under `root` that holds a task.toml, sorted."""
    root = Path(root)
    if (root / "task.toml").is_file():
        return [root]
    return sorted(p.parent for p in root.rglob("task.toml"))


def load_pool(root: str | Path = "tasks", *, strict: bool = True) -> list[Task]:
    """Load every task under `root`. With strict=False, broken tasks are skipped (see `load_pool_report`)."""
    tasks, errors = load_pool_report(root)
    if strict and errors:
        raise TaskLoadError("; ".join(errors))
    return tasks


def load_pool_report(root: str | Path = "tasks") -> tuple[list[Task], list[str]]:
    """The tasks under `root` (a folder, or a domain or id under the pool, as load_task reads it) and, for each that
    cannot be loaded, its error."""
    tasks, errors = [], []
    try:
        root = root if Path(root).is_dir() else _in_pool(root, single=False)
    except TaskLoadError as exc:
        return [], [str(exc)]
    for folder in find_task_dirs(root):
        try:
            tasks.append(Task(folder))
        except TaskLoadError as exc:
            errors.append(str(exc))
    return tasks, errors


def _in_pool(name: str | Path, *, single: bool) -> Path:
    """The folder a name that is not a folder here names in the pool (task.ids), else TaskLoadError."""
    from .ids import UnknownTask, resolve_tasks

    try:
        return resolve_tasks(name, single=single)
    except UnknownTask as exc:
        raise TaskLoadError(f"task folder {str(name)!r} does not exist ({exc})") from None
