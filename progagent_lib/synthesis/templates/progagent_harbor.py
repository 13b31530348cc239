"""Call the task's tools from a shell inside the Harbor container.

tools                      # list tools with their descriptions
tools NAME --help          # one tool's parameters
tools NAME '{"page": 2}'   # call with JSON arguments; prints the JSON result
"""

import json
import os
import sys
from pathlib import Path

from progagent_lib.task.environment import Environment
from progagent_lib.task.tools import ToolError

APP = Path(os.environ.get("APP_DIR", "/app"))


def load_env():
    import importlib.util

    spec = importlib.util.spec_from_file_location("task_environment", APP / "task" / "environment.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cls = next(
        v
        for v in vars(module).values()
        if isinstance(v, type) and issubclass(v, Environment) and v.__module__ == module.__name__
    )
    env = cls(APP / "state" / "data.db", APP / "workspace")
    params = APP / "task" / "params.json"  # the instance's parameters, for a parametrised task
    env.params = json.loads(params.read_text()) if params.is_file() else {}
    return env


def main(argv):
    env = load_env()
    if not argv:
        for name, spec in env.tool_specs.items():
            print(f"{name}: {spec.description.splitlines()[0]}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in env.tool_specs:
        print(f"error: no tool named {name!r}", file=sys.stderr)
        return 2
    if rest[:1] == ["--help"]:
        print(json.dumps(env.tool_specs[name].openai_schema(), indent=2))
        return 0
    try:
        arguments = json.loads(rest[0]) if rest else {}
        print(json.dumps(env.call_tool(name, arguments), indent=1, default=str))
    except (ToolError, json.JSONDecodeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0
