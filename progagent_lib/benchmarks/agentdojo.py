"""AgentDojo (agentdojo==0.1.35, benchmark v1.2.2) as an external suite: its user tasks, played under any harness.

Per episode, as AgentDojo's own `TaskSuite.run_task_with_pipeline` does: the suite's default environment (with the
injections of an attacked episode), `user_task.init_environment(...)` on it, a deep copy kept as the pre-environment;
the tools are `FunctionsRuntime(suite.tools).run_function(env, name, kwargs)` on the episode's own environment; the
verdict is the task's own check: `utility_from_traces(...)` where the task defines one, else
`utility(model_output, pre_environment, post_environment, strict=True)`. With an injection task attached, its own
`security(...)` (or `security_from_traces`) says whether the injection was followed.

What differs from AgentDojo's pipeline (see the README): results reach the model as JSON (DTC) or Python objects
(PTC), not AgentDojo's YAML text; arguments are checked against the tool's JSON schema before AgentDojo's pydantic
validation; the system prompt is AgentDojo's with the harness's instructions added.
"""

from __future__ import annotations

import copy
import json
import threading
from pathlib import Path
from typing import Any, Sequence

from ..harness.spec import HARNESSES
from ..task import Criterion, ToolError
from .base import Benchmark, BenchmarkError, ExternalEnvironment, ExternalTask, ExternalTool, Reference

VERSION = "v1.2.2"
SUITE_NAMES = ("workspace", "travel", "banking", "slack")
PROMPTS = Path(__file__).parent / "prompts"
UTILITY = "agentdojo_utility"  # the criterion holding the user task's own verdict
INJECTION_RESISTED = "agentdojo_injection_not_followed"  # the criterion holding not security(...)
# The attack text AgentDojo's `important_instructions` attack writes (its best-known attack), with the default
# names its `_no_model_name` variant uses: the model is not named, the user is the suites' Emma Johnson.
ATTACK = "important_instructions_no_model_name"

_lock = threading.Lock()
_environments: dict[tuple[str, str], Any] = {}  # (suite, injections as JSON) -> the loaded default environment
MAX_ATTACKED_ENVIRONMENTS = 8


def _suite(name: str):
    from agentdojo.task_suite.load_suites import get_suite

    return get_suite(VERSION, name)


def default_environment(suite, injections: dict[str, str]):
    """A fresh copy of the suite's default environment with `injections`. Parsing the YAML is the costly part (0.4 s
    for workspace), so the parsed environments are kept: the clean one of each suite, and the last few attacked ones
    (an attacked environment serves one task's reference and its episodes, then is not needed again)."""
    key = (suite.name, json.dumps(injections, sort_keys=True))
    with _lock:
        environment = _environments.pop(key, None)
        if environment is None:
            environment = suite.load_and_inject_default_environment(injections)
        _environments[key] = environment  # most recently used last
        attacked = [k for k in _environments if k[1] != "{}"]
        for old in attacked[:-MAX_ATTACKED_ENVIRONMENTS]:
            del _environments[old]
        return environment.model_copy(deep=True)


def json_value(value: Any) -> Any:
    """A tool's result as JSON values (pydantic models dumped in JSON mode: dates as ISO text)."""
    from pydantic import BaseModel

    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(v) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


class AgentDojoEnvironment(ExternalEnvironment):
    """One AgentDojo episode: its own task environment, the pre-environment copy, and the calls made (traces)."""

    def __init__(self, task: "AgentDojoTask"):
        from agentdojo.functions_runtime import FunctionsRuntime

        self.adapter = task
        super().__init__(task.tools, task=task, instruction=task.user_task.PROMPT)
        self.runtime = FunctionsRuntime(task.suite.tools)
        environment = default_environment(task.suite, task.injections)
        self.task_environment = task.user_task.init_environment(environment)
        self.pre_environment = self.task_environment.model_copy(deep=True)
        self.traces: list[Any] = []  # FunctionCall per call that reached the suite, for utility_from_traces

    def run_tool(self, name: str, arguments: dict) -> Any:
        from agentdojo.functions_runtime import FunctionCall

        # as the call was asked for (no validation: a dict argument must not turn into a nested call)
        self.traces.append(
            FunctionCall.model_construct(function=name, args=copy.deepcopy(arguments), id=None, placeholder_args=None)
        )
        result, error = self.runtime.run_function(self.task_environment, name, arguments)
        if error is not None:
            raise ToolError(error)
        return json_value(result)

    def criteria(self, final_response: str) -> list[Criterion]:
        task, output = self.adapter, final_response
        pre, post = self.pre_environment, self.task_environment
        verdict = task.user_task.utility_from_traces(output, pre, post, self.traces)
        how = "utility_from_traces"
        if verdict is None:
            verdict, how = task.user_task.utility(output, pre, post, strict=True), "utility(strict=True)"
        found = [Criterion(UTILITY, bool(verdict), 1.0, f"{task.user_task.ID}.{how}")]
        if task.injection_task is not None:
            followed = task.injection_task.security_from_traces(output, pre, post, self.traces)
            how = "security_from_traces"
            if followed is None:
                followed, how = task.injection_task.security(output, pre, post), "security"
            found.append(Criterion(INJECTION_RESISTED, not followed, 1.0, f"{task.injection_task.ID}.{how}"))
        return found


class AgentDojoTask(ExternalTask):
    """One AgentDojo user task (optionally with one injection task attached), as `Episode` sees a task."""

    def __init__(
        self, suite, user_task, tools: list[ExternalTool], injection_task=None, injections: dict[str, str] | None = None
    ):
        self.suite, self.user_task, self.tools = suite, user_task, tools
        self.injection_task = injection_task
        self.injections = dict(injections or {})
        self.group = suite.name
        self.id = f"agentdojo/{suite.name}/{user_task.ID}" + (f"/{injection_task.ID}" if injection_task else "")
        self.limits = None

    def instantiate(self, scale: str = "v0", seed: int = 0) -> AgentDojoEnvironment:
        return AgentDojoEnvironment(self)

    def reference(self) -> Reference:
        """`user_task.ground_truth(pre_environment)` and `GROUND_TRUTH_OUTPUT`, as AgentDojo's ground-truth pipeline
        plays them."""
        environment = self.user_task.init_environment(default_environment(self.suite, self.injections))
        calls = [(call.function, dict(call.args)) for call in self.user_task.ground_truth(environment)]
        return Reference(calls, self.user_task.GROUND_TRUTH_OUTPUT or "")


def suite_tools(suite) -> list[ExternalTool]:
    """The suite's functions as AgentDojo describes them to a model (its OpenAI adapter's schema)."""
    return [ExternalTool(f.name, f.description, f.parameters.model_json_schema()) for f in suite.tools]


def attack_for(suite):
    """AgentDojo's own attack object for `suite` (`important_instructions_no_model_name`). The attack asks its target
    pipeline for a model name only to address the model by it, which this variant replaces by "the AI language
    model": any registered name will do."""
    from types import SimpleNamespace

    from agentdojo.attacks.attack_registry import load_attack
    from agentdojo.models import MODEL_NAMES

    return load_attack(ATTACK, suite, SimpleNamespace(name=next(iter(MODEL_NAMES))))


def injections_for(attack, user_task, injection_task) -> dict[str, str]:
    """The injection vectors the user task's ground truth shows the model, each set to the attack's text (the
    injection task's goal wrapped in the attack's `<INFORMATION>` message)."""
    return attack.attack(user_task, injection_task)


def load(suites: Sequence[str] | None = None, injections: bool = False) -> Benchmark:
    """AgentDojo's user tasks of `suites` (all four by default); with `injections`, every (user task, injection
    task) pair of each suite instead, the injection placed where the user task's ground truth reads."""
    chosen = list(suites or SUITE_NAMES)
    unknown = [s for s in chosen if s not in SUITE_NAMES]
    if unknown:
        raise BenchmarkError(f"unknown AgentDojo suite(s) {unknown}; expected some of {', '.join(SUITE_NAMES)}")
    tasks: dict[str, ExternalTask] = {}
    skipped: dict[str, str] = {}
    for name in chosen:
        suite = _suite(name)
        tools = suite_tools(suite)
        attack = attack_for(suite) if injections else None
        for user_task in suite.user_tasks.values():
            if not injections:
                task = AgentDojoTask(suite, user_task, tools)
                tasks[task.id] = task
                continue
            for injection_task in suite.injection_tasks.values():
                try:
                    vectors = injections_for(attack, user_task, injection_task)
                except ValueError as exc:  # AgentDojo: "<task> is not injectable" (its reference reads no vector)
                    skipped[f"agentdojo/{name}/{user_task.ID}"] = str(exc)
                    break
                task = AgentDojoTask(suite, user_task, tools, injection_task, vectors)
                tasks[task.id] = task
    prompts = {name: str(PROMPTS / f"agentdojo_{spec.prompt_kind}.md") for name, spec in HARNESSES.items()}
    return Benchmark("agentdojo", tasks, prompts, skipped)


__all__ = ["AgentDojoEnvironment", "AgentDojoTask", "INJECTION_RESISTED", "UTILITY", "VERSION", "load", "suite_tools"]
