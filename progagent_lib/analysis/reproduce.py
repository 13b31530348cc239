"""Run the numbered notebooks in order through papermill, headless, for one profile."""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from .profiles import REPO, load_profile

NOTEBOOKS_DIR = REPO / "notebooks"


class NotebookFailed(Exception):
    """A notebook raised; the message names the notebook and the cell."""


@dataclass
class NotebookRun:
    notebook: str
    seconds: float
    output: Path


def notebook_paths(only: list[str] | None = None, notebooks_dir: Path = NOTEBOOKS_DIR) -> list[Path]:
    paths = sorted(Path(notebooks_dir).glob("[0-9][0-9]_*.ipynb"))
    if only:
        paths = [p for p in paths if any(p.name.startswith(o) or p.stem == o for o in only)]
    return paths


def _failed_cell(executed: Path) -> str:
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    for index, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error":
                source = cell.source.strip().splitlines()
                return f"cell {index} ({source[0][:80] if source else ''}): {out.get('ename')}: {out.get('evalue')}"
    return "cell unknown"


def _stamp_profile(executed: Path, profile: str) -> None:
    """Say in the executed copy's opening markdown cell which profile it ran under."""
    import nbformat

    nb = nbformat.read(executed, as_version=4)
    first = next((cell for cell in nb.cells if cell.cell_type == "markdown"), None)
    if first is not None:
        first.source = first.source.rstrip() + f"\n\n*This copy ran under profile `{profile}` (`progagent reproduce`).*"
        nbformat.write(nb, executed)


def reproduce(
    profile: str = "cpu-smoke",
    run_dir: str | Path | None = None,
    only: list[str] | None = None,
    kernel_name: str = "python3",
    notebooks_dir: Path = NOTEBOOKS_DIR,
    engine: bool | None = None,
) -> list[NotebookRun]:
    """Execute each notebook with parameters (profile, run_dir); keep executed copies in the run folder.

    `kernel_name` "python3" is the interpreter running this (jupyter_client's native kernel), whatever kernel
    the notebooks name for JupyterLab ("progagent", registered inside .venv by `make install`).

    A profile with `engine: MODEL` gets one vLLM server for the whole run (`engine` None: as the profile says;
    False: none, generation in the notebooks' processes): the notebooks find it through $PROGAGENT_ENGINE_URL,
    and GSPO rollouts and evaluations generate there. Seconds per notebook go to `<run_dir>/reproduce.json`."""
    prof = load_profile(profile, run_dir)
    model = prof.get("engine") if engine is not False else None
    with contextlib.ExitStack() as stack:
        seconds: dict[str, float] = {}
        ready: Callable[[], None] | None = None
        if model:
            from ..engine import EngineServer, free_port

            started = time.perf_counter()
            print(f"engine: starting vLLM for {model} (profile {prof.name}) ...", flush=True)
            kv_cache_gib = prof.get("engine_kv_cache_gib") or 2  # the server's KV cache on CPU, in GiB
            server = EngineServer(str(model), free_port(), kv_cache_gib=kv_cache_gib)
            stack.callback(server.stop)
            server.launch()  # it loads while the notebooks that generate nothing run

            def ready() -> None:
                server.wait_ready()
                seconds["engine_start"] = time.perf_counter() - started
                assert server.served_name is not None  # EngineServer names the model when it is made
                print(
                    f"engine: {server.base_url} serves {server.served_name!r} ({seconds['engine_start']:.0f}s)",
                    flush=True,
                )
                stack.enter_context(
                    _environment(PROGAGENT_ENGINE_URL=server.base_url, PROGAGENT_ENGINE_MODEL=server.served_name)
                )

        runs = _run_notebooks(prof, only, kernel_name, notebooks_dir, seconds, ready)
    return runs


def uses_engine(notebook: Path) -> bool:
    """Whether a notebook generates with a model (the profile's engine, where it has one). A notebook that does not
    says so in its metadata (`"progagent": {"uses_engine": false}`); unmarked, it is taken to."""
    metadata = json.loads(notebook.read_text(encoding="utf-8")).get("metadata", {})
    return bool(metadata.get("progagent", {}).get("uses_engine", True))


@contextlib.contextmanager
def _environment(**values: str):
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _run_notebooks(
    prof, only, kernel_name: str, notebooks_dir: Path, seconds: dict[str, float], engine_ready=None
) -> list[NotebookRun]:
    """Run the notebooks in order; `engine_ready` (the engine's wait) is called once, before the first notebook that
    uses the engine."""
    import papermill

    out_dir = prof.path("notebooks", ".keep").parent
    runs = []
    paths = notebook_paths(only, notebooks_dir)
    for i, notebook in enumerate(paths, 1):
        if engine_ready is not None and uses_engine(notebook):
            engine_ready()
            engine_ready = None
        executed = out_dir / notebook.name
        started = time.perf_counter()
        print(f"[{i}/{len(paths)}] {notebook.name} ...", flush=True)
        try:
            papermill.execute_notebook(
                str(notebook),
                str(executed),
                parameters={"profile": prof.name, "run_dir": str(prof.run_dir)},
                kernel_name=kernel_name,
                cwd=str(notebooks_dir),
                # a bar over the notebook's cells: a training cell runs for minutes
                progress_bar={"desc": notebook.name, "unit": "cell"},
            )
        except papermill.PapermillExecutionError as exc:
            raise NotebookFailed(
                f"{notebook.name} failed at {_failed_cell(executed)} (executed copy: {executed})"
            ) from exc
        elapsed = time.perf_counter() - started
        _stamp_profile(executed, prof.name)
        print(f"[{i}/{len(paths)}] {notebook.name} done in {elapsed:.0f}s", flush=True)
        runs.append(NotebookRun(notebook.name, elapsed, executed))
        seconds[notebook.name] = elapsed
        (prof.run_dir / "reproduce.json").write_text(json.dumps(seconds, indent=2))
    return runs
