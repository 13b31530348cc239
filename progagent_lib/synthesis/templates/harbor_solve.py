#!/usr/bin/env python3
"""Harbor reference solution: run the task's oracle against the live tools; save its final response."""

import importlib.util
import os
import sys
from pathlib import Path

APP = Path(os.environ.get("APP_DIR", "/app"))
HERE = Path(os.environ.get("SOLUTION_DIR", Path(__file__).resolve().parent))
sys.path.insert(0, str(APP / "lib"))

from progagent_harbor import load_env  # noqa: E402 - importable once sys.path holds the app's lib folder

env = load_env()
spec = importlib.util.spec_from_file_location("oracle", HERE / "oracle.py")
assert spec is not None and spec.loader is not None  # a .py file always has both
oracle = importlib.util.module_from_spec(spec)
spec.loader.exec_module(oracle)
(APP / "final_response.md").write_text(oracle.solve(env.tools, **env.params))
print("final response written to", APP / "final_response.md")
