#!/usr/bin/env python3
"""Harbor verifier: score the container's end state with the task's own criteria.

The verifier-only facts (tables starting with "_") are kept out of the agent's image and shipped here,
in hidden_facts.sql; they are restored into a copy of the end-state database before scoring. The reference state
(what the task's oracle leaves, which its criteria compare with) is shipped here too, in reference/.
Writes the binary reward to $LOGS_DIR/verifier/reward.txt and the details to reward.json.
"""

import json
import os
import shutil
import sqlite3
import sys
import tempfile
from pathlib import Path

APP = Path(os.environ.get("APP_DIR", "/app"))
LOGS = Path(os.environ.get("LOGS_DIR", "/logs"))
TESTS = Path(os.environ.get("TESTS_DIR", Path(__file__).resolve().parent))
sys.path.insert(0, str(APP / "lib"))

from progagent_lib.task.environment import Environment  # noqa: E402 - importable once sys.path holds the app's lib


def main() -> int:
    import importlib.util

    out = LOGS / "verifier"
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp())
    db = scratch / "data.db"
    shutil.copy2(APP / "state" / "data.db", db)
    con = sqlite3.connect(db)
    con.executescript((TESTS / "hidden_facts.sql").read_text())
    con.commit()
    con.close()
    spec = importlib.util.spec_from_file_location("task_environment", APP / "task" / "environment.py")
    assert spec is not None and spec.loader is not None  # a .py file always has both
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cls = next(
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, Environment) and v.__module__ == module.__name__
    )
    env = cls(db, APP / "workspace")
    params = APP / "task" / "params.json"  # the instance's parameters, for a parametrised task
    env.params = json.loads(params.read_text()) if params.is_file() else {}
    if (TESTS / "reference").is_dir():  # the state the task's oracle leaves: the truth its criteria compare with
        env.use_reference(TESTS / "reference")
    answer_file = APP / "final_response.md"
    answer = answer_file.read_text() if answer_file.is_file() else ""
    result = env.verify(answer)
    (out / "reward.txt").write_text(f"{int(result.reward)}\n")
    (out / "reward.json").write_text(json.dumps(result.to_dict(), indent=2))
    print(result.summary())
    return 0


if __name__ == "__main__":
    sys.exit(main())
