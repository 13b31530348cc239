"""BFCL multi-turn (bfcl-eval==2026.3.23, BFCL v4) as an external suite: its four multi-turn categories (base,
miss_func, miss_param, long_context; 200 entries each), played under any harness, scored by its own
`multi_turn_checker`.

Per episode, as BFCL's own inference (`BaseHandler.inference_multi_turn_FC`) does:
- the backends: one instance per involved class (`CLASS_FILE_PATH_MAPPING`), loaded with
  `_load_scenario(deepcopy(initial_config[class]), long_context=...)`; this episode's own objects, held by the
  environment (never BFCL's module globals), so nothing is shared with another episode;
- the tools: the entry's function docs (`load_dataset_entry`, BFCL's language hint included), their types mapped to
  JSON schema by BFCL's `GORILLA_TO_OPENAPI`; a tool call reaches the backend method with its JSON arguments as
  keyword arguments (never `eval`); a method that raises gives "Error during execution: ..." as BFCL's does;
- the user turns: the first is the instruction; when the model ends its turn (a turn without tool calls, or
  `claim_done`) the next scripted user message follows (`next_user_message`); a miss_func turn that adds its held
  out functions comes with BFCL's "I have updated some more functions ..." message, and the tool is offered (and
  callable) only from that turn on;
- the verdict: BFCL's `multi_turn_checker(model_calls, ground_truth, entry, category, model_name)`. The model's
  calls are rendered by us from the structured calls that reached the backend: `name(key=repr(value), ...)`, one
  list per user turn (see `call_string`). The checker replays them and the ground truth on fresh backends of its
  own through BFCL's `execute_multi_turn_func_call` (its `eval` of these strings): that is the suite's checker. Its
  backend instances live in BFCL's module globals under a model name unique to the episode, removed after scoring.
  As BFCL's runner (`_evaluate_single_multi_turn_entry`) does before calling the checker, an episode that ended
  before every user turn was delivered fails as `multi_turn:force_terminated`.
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import re
import threading
import uuid
from pathlib import Path
from typing import Any, Sequence

from ..pyast import parse as parse_python
from ..harness.spec import HARNESSES
from ..task import Criterion, ToolError
from .base import Benchmark, BenchmarkError, ExternalEnvironment, ExternalTask, ExternalTool, Reference

VERSION = "2026.3.23"
CATEGORIES = ("base", "miss_func", "miss_param", "long_context")
PROMPTS = Path(__file__).parent / "prompts"
CHECKER = "bfcl_multi_turn_checker"  # the criterion holding the checker's verdict
_globals_lock = threading.Lock()


def _bfcl():
    """BFCL's own modules this adapter uses (imported on first use)."""
    from bfcl_eval.constants.default_prompts import DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC
    from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING, STATELESS_CLASSES
    from bfcl_eval.constants.type_mappings import GORILLA_TO_OPENAPI
    from bfcl_eval.eval_checker.multi_turn_eval import multi_turn_checker, multi_turn_utils
    from bfcl_eval.utils import load_dataset_entry, load_ground_truth_entry

    return {
        "added_functions_prompt": DEFAULT_USER_PROMPT_FOR_ADDITIONAL_FUNCTION_FC,
        "class_modules": CLASS_FILE_PATH_MAPPING,
        "stateless": STATELESS_CLASSES,
        "types": GORILLA_TO_OPENAPI,
        "checker": multi_turn_checker,
        "utils": multi_turn_utils,
        "load_entries": load_dataset_entry,
        "load_ground_truth": load_ground_truth_entry,
    }


# --- schemas and call strings ----------------------------------------------------------------------------------


def json_schema(parameters: dict, types: dict[str, str]) -> dict:
    """A BFCL function doc's `parameters` as JSON schema: its types mapped by BFCL's `GORILLA_TO_OPENAPI` (an
    unknown or missing type becomes string, "float" gets BFCL's "This is a float type value." note), nested
    properties and items alike."""

    def convert(schema: dict) -> dict:
        schema = dict(schema)
        kind = schema.get("type", "string")
        if kind == "float":
            schema["description"] = (schema.get("description", "") + " This is a float type value.").strip()
        schema["type"] = types.get(kind, "string")
        if "properties" in schema:
            schema["properties"] = {k: convert(v) for k, v in schema["properties"].items()}
        if isinstance(schema.get("items"), dict):
            schema["items"] = convert(schema["items"])
        return schema

    converted = convert({**parameters, "type": "dict"})
    return {
        "type": "object",
        "properties": converted.get("properties", {}),
        "required": list(converted.get("required", [])),
    }


def call_string(name: str, arguments: dict) -> str:
    """One call in the form BFCL's checker executes: `name(key=value, ...)` with each value `repr`'d. The values
    are JSON values (str, numbers, booleans, None, lists, dicts), whose repr is a Python literal, and the name and
    keys are a tool's and its schema's (checked before the call reached the backend): no model text is code here."""
    if not name.isidentifier() or not all(isinstance(k, str) and k.isidentifier() for k in arguments):
        raise ValueError(f"not a call BFCL can replay: {name!r} {sorted(arguments)!r:.200}")
    return f"{name}({', '.join(f'{key}={value!r}' for key, value in arguments.items())})"


def parse_call(text: str, methods: dict[str, Any]) -> tuple[str, dict]:
    """A ground-truth call string (`cd(folder='document')`, `sort('final_report.pdf')`) as (name, keyword
    arguments), read with `ast.literal_eval` (never executed); positional arguments named by the backend method's
    signature."""
    import ast

    call = parse_python(text.strip(), mode="eval").body
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise ValueError(f"not a plain call: {text!r}")
    name = call.func.id
    arguments = {kw.arg: ast.literal_eval(kw.value) for kw in call.keywords}
    if call.args:
        names = [p for p in inspect.signature(methods[name]).parameters]
        for position, value in enumerate(call.args):
            arguments[names[position]] = ast.literal_eval(value)
    return name, _as_json(arguments)


def _as_json(value: Any) -> Any:
    """The value as JSON would carry it (tuples become lists), as a model's call would give it."""
    return json.loads(json.dumps(value))


def json_result(value: Any) -> Any:
    """A backend method's result as a JSON value (BFCL shows the model `json.dumps` of a dict, `str()` of the rest)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    try:
        return json.loads(json.dumps(value))
    except (TypeError, ValueError):
        return str(value)


# --- the episode ------------------------------------------------------------------------------------------------


class BFCLEnvironment(ExternalEnvironment):
    """One BFCL multi-turn episode: its own backend instances, the scripted user turns, the calls per turn."""

    def __init__(self, task: "BFCLTask"):
        bfcl = _bfcl()
        self.adapter = task
        entry = task.entry
        first = _user_text(entry["question"][0], task.added_functions(0), bfcl)
        super().__init__(task.tools, task=task, instruction=first)
        # The backends, as BFCL's execute_multi_turn_func_call builds them, but this episode's own objects.
        self.backends: dict[str, Any] = {}
        self.methods: dict[str, Any] = {}
        for class_name in entry["involved_classes"]:
            instance = getattr(importlib.import_module(bfcl["class_modules"][class_name]), class_name)()
            if class_name not in bfcl["stateless"]:
                instance._load_scenario(
                    copy.deepcopy(entry["initial_config"].get(class_name, {})), long_context=task.long_context
                )
            self.backends[class_name] = instance
            for method_name, method in inspect.getmembers(instance, predicate=inspect.ismethod):
                if not method_name.startswith("_"):
                    self.methods[method_name] = method  # a later class wins a shared name, as in BFCL
        self.turn = 0  # the user turn the model is answering
        self.offered = set(task.functions_from(0))  # tools offered so far
        self.calls_per_turn: list[list[str]] = [[]]  # call strings that reached the backend, per user turn
        self.replies: list[str] = []  # the model's reply that ended each user turn

    def tool_schemas(self) -> list[dict]:
        """Only the tools offered so far (miss_func adds some in a later turn)."""
        return [spec.openai_schema() for name, spec in self.tool_specs.items() if name in self.offered]

    def run_tool(self, name: str, arguments: dict) -> Any:
        if name not in self.offered or name not in self.methods:
            raise ToolError(f"no tool named {name!r:.100}; available tools: {', '.join(sorted(self.offered))}")
        self.calls_per_turn[self.turn].append(call_string(name, arguments))
        try:
            result = self.methods[name](**copy.deepcopy(arguments))
        except Exception as exc:  # as BFCL's execute_multi_turn_func_call reports a call that raises
            raise ToolError(f"Error during execution: {exc}") from exc
        return json_result(result)

    def next_user_message(self, reply: str) -> str | None:
        """The model ended user turn `turn` with `reply`: the next scripted user message, or None after the last."""
        task = self.adapter
        if self.turn + 1 >= len(task.entry["question"]):
            return None
        self.replies.append(reply)
        self.turn += 1
        self.calls_per_turn.append([])
        self.offered |= set(task.functions_from(self.turn))
        return _user_text(task.entry["question"][self.turn], task.added_functions(self.turn), _bfcl())

    def model_result(self) -> list[list[list[str]]]:
        """The model's calls as BFCL's checker takes them: per user turn delivered, its steps (lists of call
        strings). A turn's calls are one step: the checker runs a turn's steps in order and compares their combined
        results, so the grouping does not change its verdict; a turn without calls has no step (as BFCL's runner
        drops empty steps)."""
        return [[calls] if calls else [] for calls in self.calls_per_turn]

    def criteria(self, final_response: str) -> list[Criterion]:
        task = self.adapter
        verdict = run_checker(task.entry, task.ground_truth, self.model_result())
        detail = (
            "valid" if verdict.get("valid") else f"{verdict.get('error_type', '')}: {verdict.get('error_message', '')}"
        )
        return [Criterion(CHECKER, bool(verdict.get("valid")), 1.0, detail)]


def run_checker(entry: dict, ground_truth: list[list[str]], model_result: list[list[list[str]]]) -> dict:
    """BFCL's verdict on `model_result`: its runner's force-termination check (fewer turns than the ground truth),
    then `multi_turn_checker` under a model name of its own; BFCL's cached backend instances of that name are
    removed afterwards."""
    if len(model_result) != len(ground_truth):
        return {
            "valid": False,
            "error_type": "multi_turn:force_terminated",
            "error_message": f"the episode ended after {len(model_result)} of {len(ground_truth)} user turns",
        }
    bfcl = _bfcl()
    model_name = f"progagent_{uuid.uuid4().hex}"
    try:
        return bfcl["checker"].multi_turn_checker(
            model_result, ground_truth, copy.deepcopy(entry), entry["id"].rsplit("_", 1)[0], model_name
        )
    finally:
        forget_instances(model_name)


def forget_instances(model_name: str) -> int:
    """Remove BFCL's cached backend instances of `model_name` (module globals of multi_turn_utils, named
    `<model>[_ground_truth]_eval_<entry>_<class>_instance`); how many were removed."""
    namespace = vars(_bfcl()["utils"])
    prefix = re.sub(r"[-./:]", "_", model_name) + "_"
    with _globals_lock:
        stale = [key for key in namespace if key.startswith(prefix) and key.endswith("_instance")]
        for key in stale:
            del namespace[key]
    return len(stale)


def _user_text(messages: list[dict], added: list[str], bfcl: dict) -> str:
    """A user turn's text. A miss_func turn that only adds functions has no message: BFCL sends its own."""
    if not messages:
        return bfcl["added_functions_prompt"] if added else ""
    return "\n\n".join(m["content"] for m in messages if m.get("role") == "user")


# --- tasks and the suite ----------------------------------------------------------------------------------------


class BFCLTask(ExternalTask):
    """One BFCL multi-turn entry, as `Episode` sees a task."""

    def __init__(self, category: str, entry: dict, ground_truth: list[list[str]], tools: list[ExternalTool]):
        self.category, self.entry, self.ground_truth, self.tools = category, entry, ground_truth, tools
        self.group = category
        self.id = f"bfcl/{category}/{entry['id']}"
        self.long_context = "long_context" in category
        self.limits = None
        # miss_func: functions held out until a later turn (turn index -> names)
        self.held_out = {
            int(turn): [doc["name"] for doc in docs] for turn, docs in (entry.get("missed_function") or {}).items()
        }
        self.initial = [doc["name"] for doc in entry["function"]]

    def functions_from(self, turn: int) -> list[str]:
        return self.initial if turn == 0 else self.added_functions(turn)

    def added_functions(self, turn: int) -> list[str]:
        return self.held_out.get(turn, [])

    def instantiate(self, scale: str = "v0", seed: int = 0) -> BFCLEnvironment:
        return BFCLEnvironment(self)

    def reference(self) -> Reference:
        """BFCL's per-turn ground-truth calls, as (name, JSON arguments). No final answer: BFCL checks calls only."""
        env = self.instantiate()
        try:
            turns = [[parse_call(text, env.methods) for text in turn] for turn in self.ground_truth]
        finally:
            env.close()
        return Reference([call for turn in turns for call in turn], "", turns)


def load(categories: Sequence[str] | None = None, suites: Sequence[str] | None = None) -> Benchmark:
    """BFCL's multi-turn entries of `categories` (all four by default; `suites` is the CLI's name for the same)."""
    chosen = list(categories or suites or CATEGORIES)
    unknown = [c for c in chosen if c not in CATEGORIES]
    if unknown:
        raise BenchmarkError(
            f"unknown BFCL multi-turn categor(y/ies) {unknown}; expected some of {', '.join(CATEGORIES)}"
        )
    bfcl = _bfcl()
    tasks: dict[str, ExternalTask] = {}
    for category in chosen:
        entries = bfcl["load_entries"](f"multi_turn_{category}")
        answers = {a["id"]: a["ground_truth"] for a in bfcl["load_ground_truth"](f"multi_turn_{category}")}
        for entry in entries:
            docs = list(entry["function"]) + [d for docs in (entry.get("missed_function") or {}).values() for d in docs]
            tools = [
                ExternalTool(d["name"], d.get("description", ""), json_schema(d.get("parameters", {}), bfcl["types"]))
                for d in docs
            ]
            task = BFCLTask(category, entry, answers[entry["id"]], tools)
            tasks[task.id] = task
    prompts = {name: str(PROMPTS / f"bfcl_{spec.prompt_kind}.md") for name, spec in HARNESSES.items()}
    return Benchmark("bfcl", tasks, prompts)


def direct_verdict(task: BFCLTask) -> dict:
    """The ground truth handed to the checker directly (each turn's reference strings as the model's one step):
    the baseline the replay under a harness is compared with."""
    return run_checker(task.entry, task.ground_truth, [[turn] if turn else [] for turn in task.ground_truth])


__all__ = [
    "BFCLEnvironment",
    "BFCLTask",
    "CATEGORIES",
    "CHECKER",
    "VERSION",
    "call_string",
    "direct_verdict",
    "forget_instances",
    "json_schema",
    "load",
    "parse_call",
    "run_checker",
]
