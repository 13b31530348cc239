"""Export tasks to Harbor's layout and to the authors' per-scale layout, and import the latter back.

Harbor (one task folder per scale):
    task.toml, instruction.md, environment/Dockerfile (+ app/: state, workspace, tools CLI, task code),
    tests/test.sh (writes the reward to /logs/verifier/reward.txt), solution/solve.sh
A parametrised task is exported as one instance (the seed's parameters): instruction.md is its rendered
instruction, app/task/params.json its parameters (read by the tools CLI, the verifier and the solution),
and task.toml's [metadata] carries them as JSON.
The agent's image never holds the verifier-only tables (names starting with "_"): they travel in
tests/hidden_facts.sql, which Harbor copies in only when it verifies.

Authors' layout (our reading of their release: one folder per scale):
    <task>/v0..v3/{data.py, env.py, prompt.md, task_verification.py}
data.py embeds the generator pinned to its scale, env.py is the environment module, and
task_verification.py embeds the oracle and the task's metadata; `import_authors` rebuilds the native folder.
prompt.md keeps the `{name}` placeholders of a parametrised task; `python data.py OUT SEED` also writes the
instance's params.json and rendered instruction.md, and `verify(env)` runs the oracle with `env.params`.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import textwrap
from pathlib import Path

from ..cache import READY
from ..task import SCALES, Task, load_task
from ..task.scales import check_scale

LIB_ROOT = Path(__file__).resolve().parents[1]  # progagent_lib/
TEMPLATES = Path(__file__).parent / "templates"


class ExportError(Exception):
    """A task cannot be exported or imported; the message names the task and the file."""


def harbor_name(task: Task, scale: str) -> str:
    return f"{task.id.replace('/', '__')}__{scale}"


def _copy_task_library(target: Path) -> None:
    """The self-contained part of progagent_lib that environment.py and the oracle need (stdlib only)."""
    (target / "progagent_lib").mkdir(parents=True)
    (target / "progagent_lib" / "__init__.py").write_text(
        "from .task import (Criterion, Environment, GenContext, SCALES, Task, TaskLoadError, ToolError, VerifyResult,\n"
        "                   WorkspaceEnvironment, load_pool, load_task, paginate, tool)\n"
    )
    shutil.copytree(
        LIB_ROOT / "task",
        target / "progagent_lib" / "task",
        ignore=shutil.ignore_patterns("__pycache__", "cli.py", "certify.py"),
    )
    shutil.copy2(TEMPLATES / "progagent_harbor.py", target / "progagent_harbor.py")


def _split_hidden_tables(db_path: Path) -> str:
    """Remove the verifier-only tables from db_path; return SQL that recreates them."""
    con = sqlite3.connect(db_path)
    try:
        hidden = [
            r[0]
            for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' AND name LIKE '\\_%' ESCAPE '\\'")
        ]
        lines = [
            line
            for line in con.iterdump()
            if any(f'"{t}"' in line or f"TABLE {t} " in line or f"TABLE {t}(" in line for t in hidden)
        ]
        for table in hidden:
            con.execute(f'DROP TABLE "{table}"')
        con.commit()
        con.execute("VACUUM")
    finally:
        con.close()
    return "\n".join(lines) + "\n"


INSTRUCTION_APPENDIX = """

---
How to work in this environment: the business data is reachable only through the `tools` command
(`tools` lists them, `tools NAME --help` shows parameters, `tools NAME '{"arg": value}'` calls one and
prints JSON). Documents are in /app/workspace. When you are finished, write your final answer for the
user to /app/final_response.md.
"""


def export_harbor(task: Task, out_root: str | Path, scales=SCALES, seed: int = 0) -> list[Path]:
    """Write one Harbor task folder per scale under out_root; returns the folders."""
    out_root = Path(out_root)
    folders = []
    for scale in scales:
        check_scale(scale)
        folder = out_root / harbor_name(task, scale)
        if folder.exists():
            shutil.rmtree(folder)
        app = folder / "environment" / "app"
        state = task.state_dir(scale, seed)
        (app / "state").mkdir(parents=True)
        shutil.copy2(state / "data.db", app / "state" / "data.db")
        shutil.copytree(state / "workspace", app / "workspace")
        hidden_sql = _split_hidden_tables(app / "state" / "data.db")
        (app / "task").mkdir()
        shutil.copy2(task.root / "environment.py", app / "task" / "environment.py")
        params = task.params_for(seed)
        (app / "task" / "params.json").write_text(json.dumps(params, sort_keys=True) + "\n")
        _copy_task_library(app / "lib")
        (app / "bin").mkdir()
        (app / "bin" / "tools").write_text(
            "#!/usr/bin/env python3\nimport os, sys\nsys.path.insert(0, os.path.join(os.environ.get('APP_DIR', '/app'), 'lib'))\n"
            "from progagent_harbor import main\nsys.exit(main(sys.argv[1:]))\n"
        )
        (app / "bin" / "tools").chmod(0o755)
        (folder / "environment" / "Dockerfile").write_text(
            textwrap.dedent("""\
            FROM python:3.11-slim
            COPY app /app
            ENV APP_DIR=/app PATH=/app/bin:$PATH
            WORKDIR /app/workspace
            """)
        )
        (folder / "instruction.md").write_text(task.instruction(params) + INSTRUCTION_APPENDIX)
        limits = task.limits
        (folder / "task.toml").write_text(
            textwrap.dedent(f"""\
            version = "1.0"

            [metadata]
            author_name = "ProgAgent workbench export"
            category = "{task.domain}"
            tags = ["progagent", "{task.domain}", "{scale}"]
            progagent_task = "{task.id}"
            scale = "{scale}"
            seed = {seed}
            params = {json.dumps(json.dumps(params, sort_keys=True))}
            title = {task.title!r}

            [verifier]
            timeout_sec = 120.0

            [agent]
            timeout_sec = {float(limits.get("agent_timeout_sec", 1800))}

            [environment]
            build_timeout_sec = 600.0
            cpus = 1
            memory_mb = 4096
            allow_internet = false
            """).replace("'", '"')
        )
        tests = folder / "tests"
        tests.mkdir()
        (tests / "hidden_facts.sql").write_text(hidden_sql)
        reference = task.reference_dir(scale, seed)
        shutil.copytree(reference, tests / "reference", ignore=shutil.ignore_patterns(READY))
        shutil.copy2(TEMPLATES / "harbor_verify.py", tests / "verify.py")
        (tests / "test.sh").write_text(
            textwrap.dedent("""\
            #!/usr/bin/env bash
            # Scores the end state; writes 1 or 0 to $LOGS_DIR/verifier/reward.txt (default /logs).
            set -u
            here="$(cd "$(dirname "$0")" && pwd)"
            export TESTS_DIR="${TESTS_DIR:-$here}"
            python3 "$TESTS_DIR/verify.py" || { mkdir -p "${LOGS_DIR:-/logs}/verifier"; echo 0 > "${LOGS_DIR:-/logs}/verifier/reward.txt"; }
            """)
        )
        solution = folder / "solution"
        solution.mkdir()
        shutil.copy2(task.root / "oracle.py", solution / "oracle.py")
        shutil.copy2(TEMPLATES / "harbor_solve.py", solution / "solve.py")
        (solution / "solve.sh").write_text(
            textwrap.dedent("""\
            #!/usr/bin/env bash
            set -eu
            here="$(cd "$(dirname "$0")" && pwd)"
            export SOLUTION_DIR="${SOLUTION_DIR:-$here}"
            python3 "$SOLUTION_DIR/solve.py"
            """)
        )
        for script in (tests / "test.sh", solution / "solve.sh"):
            script.chmod(0o755)
        folders.append(folder)
    return folders


# --- the authors' per-scale layout -----------------------------------------------------------------
_BEGIN, _END = "# ---- BEGIN {} ----", "# ---- END {} ----"


def _embed(label: str, text: str) -> str:
    return f"{_BEGIN.format(label)}\n{text.rstrip()}\n{_END.format(label)}\n"


def _extract(label: str, text: str, where: Path) -> str:
    begin, end = _BEGIN.format(label), _END.format(label)
    if begin not in text or end not in text:
        raise ExportError(f"{where}: no embedded {label} section; was it exported by progagent?")
    return text.split(begin + "\n", 1)[1].split("\n" + end, 1)[0] + "\n"


def export_authors(task: Task, out_root: str | Path) -> Path:
    """Write <out_root>/<task name>/v0..v3/{data.py, env.py, prompt.md, task_verification.py}."""
    folder = Path(out_root) / task.id.replace("/", "__")
    if folder.exists():
        shutil.rmtree(folder)
    toml_text = (task.root / "task.toml").read_text()
    generator = (task.root / "generator.py").read_text()
    oracle = (task.root / "oracle.py").read_text()
    for scale in SCALES:
        target = folder / scale
        target.mkdir(parents=True)
        (target / "prompt.md").write_text(task.prompt + "\n")
        shutil.copy2(task.root / "environment.py", target / "env.py")
        (target / "data.py").write_text(
            f'"""Data generator for {task.id} at scale {scale}: python data.py OUT_DIR [SEED]."""\n'
            f'SCALE = "{scale}"\n\n'
            + _embed("generator", generator)
            + textwrap.dedent("""

            if __name__ == "__main__":
                import random, sqlite3, sys, tomllib
                from pathlib import Path
                import json
                from progagent_lib.task.task import GenContext, ParamContext, _seed_for, params_from_toml, render_instruction
                from task_verification import TASK_TOML
                out, seed = Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 0
                config = tomllib.loads(TASK_TOML)
                draw = params_from_toml(config["params"]) if "params" in config else globals().get("params")
                params = draw(ParamContext(config["id"], seed, config)) if draw else {}
                (out / "workspace").mkdir(parents=True)
                (out / "params.json").write_text(json.dumps(params, sort_keys=True))
                (out / "instruction.md").write_text(render_instruction((Path(__file__).parent / "prompt.md").read_text(), params))
                con = sqlite3.connect(out / "data.db")
                generate(GenContext(con, out / "workspace", SCALE, seed, random.Random(_seed_for(config["id"], seed)), config,
                                    params))
                con.commit()
            """)
        )
        (target / "task_verification.py").write_text(
            f'"""Verification for {task.id} at {scale}: the oracle, submitted through env.step."""\n'
            f"TASK_TOML = {toml_text!r}\n\n"
            + _embed("oracle", oracle)
            + textwrap.dedent("""

            def verify(env):
                \"\"\"Run the oracle against env's tools (with the instance's env.params) and submit its answer.

                The oracle's final state is what the criteria compare with: it is kept as the reference first.\"\"\"
                import shutil
                import sqlite3
                import tempfile
                from pathlib import Path

                answer = solve(env.tools, **(getattr(env, "params", None) or {}))
                reference = Path(tempfile.mkdtemp(prefix="reference-"))
                env.db.commit()
                copy = sqlite3.connect(reference / "data.db")
                env.db.backup(copy)
                copy.close()
                shutil.copytree(env.workspace, reference / "workspace")
                (reference / "answer.txt").write_text(answer)
                env.use_reference(reference)
                return env.step({"name": "claim_done", "arguments": {"action": answer}})
            """)
        )
    return folder


def import_authors(folder: str | Path, out_root: str | Path) -> Task:
    """Rebuild a native task folder from the authors' layout; checks the scales agree."""
    folder = Path(folder)
    scale_dirs = [folder / s for s in SCALES]
    missing = [
        str(p / f)
        for p in scale_dirs
        for f in ("data.py", "env.py", "prompt.md", "task_verification.py")
        if not (p / f).is_file()
    ]
    if missing:
        raise ExportError(f"{folder}: missing {', '.join(missing[:4])}")
    for name in ("env.py", "prompt.md"):
        texts = {(p / name).read_text() for p in scale_dirs}
        if len(texts) != 1:
            raise ExportError(
                f"{folder}: {name} differs between scales; the instruction and tools must not change with scale"
            )
    base = scale_dirs[0]
    verification = (base / "task_verification.py").read_text()
    namespace: dict = {}
    exec(verification.split(_BEGIN.format("oracle"))[0], namespace)  # only the TASK_TOML literal
    toml_text = namespace.get("TASK_TOML")
    if not toml_text:
        raise ExportError(f"{base / 'task_verification.py'}: no TASK_TOML")
    import tomllib

    task_id = tomllib.loads(toml_text)["id"]
    target = Path(out_root) / task_id
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    (target / "task.toml").write_text(toml_text)
    (target / "prompt.md").write_text((base / "prompt.md").read_text())
    shutil.copy2(base / "env.py", target / "environment.py")
    (target / "generator.py").write_text(_extract("generator", (base / "data.py").read_text(), base / "data.py"))
    (target / "oracle.py").write_text(_extract("oracle", verification, base / "task_verification.py"))
    return load_task(target)
