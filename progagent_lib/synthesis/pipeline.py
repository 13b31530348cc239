"""`progagent synth`: intents (Stage I) -> construction (Stages II-V) -> certification -> repair loop.

Each candidate is written to a staging folder and certified at every scale. On failure, the
certification report and the oracle's execution trace go back to the constructor, for a bounded number
of repair rounds. A candidate that certifies is copied into the output pool.
"""

from __future__ import annotations

import json
import re
import shutil
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..task import SCALES, Task, TaskLoadError, load_task
from ..task.certify import CertifyReport, certify_task
from .constructor import Constructor, ConstructorError

PROMPTS = Path(__file__).parent / "prompts"
REQUIRED_FILES = ("task.toml", "prompt.md", "generator.py", "environment.py", "oracle.py")
_FILE_HEADER = re.compile(r"^=== FILE: (\S+) ===\s*$", re.MULTILINE)


@dataclass
class Intent:
    """A Stage I request template and the instance parameters proposed for it (name, values, what changes)."""

    request: str
    parameters: list[dict] = field(default_factory=list)

    def describe_parameters(self) -> str:
        if not self.parameters:
            return "(none proposed: choose two or three that change the correct work, with four or more values each)"
        return "\n".join(
            f"- {p.get('name')}: values {json.dumps(p.get('values'))}; {p.get('changes', '')}".rstrip("; ")
            for p in self.parameters
        )


@dataclass
class Attempt:
    round: int
    passed: bool
    problems: list[str] = field(default_factory=list)


@dataclass
class Candidate:
    task_id: str
    intent: str
    staging: str
    parameters: list[dict] = field(default_factory=list)  # what Stage I proposed
    certified: bool = False
    attempts: list[Attempt] = field(default_factory=list)
    output: str | None = None


def load_prompt(name: str, prompts_dir: str | Path | None = None) -> str:
    """A prompt template; a user's folder of edited prompts takes precedence over the bundled ones."""
    for folder in ([Path(prompts_dir)] if prompts_dir else []) + [PROMPTS]:
        if (folder / name).is_file():
            return (folder / name).read_text()
    raise FileNotFoundError(f"no prompt {name!r} in {prompts_dir or PROMPTS}")


def parse_files(text: str) -> dict[str, str]:
    """Split a constructor answer into {filename: content}; strips Markdown code fences."""
    parts = _FILE_HEADER.split(text)
    files = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        body = body.strip("\n")
        fenced = re.fullmatch(r"```[\w.+-]*\n(.*?)\n```\s*", body, re.DOTALL)
        files[name.strip("`")] = (fenced.group(1) if fenced else body) + "\n"
    return files


def _intent(item) -> Intent | None:
    if isinstance(item, str):  # a request without proposed parameters: construction is asked to choose them
        return Intent(item)
    if not isinstance(item, dict) or not isinstance(item.get("request"), str):
        return None
    parameters = item.get("parameters") or []
    if not isinstance(parameters, list) or not all(
        isinstance(p, dict) and isinstance(p.get("name"), str) and isinstance(p.get("values"), list) for p in parameters
    ):
        return None
    return Intent(item["request"], parameters)


def propose_intents(constructor: Constructor, domain: str, subcategory: str, n: int, prompts_dir=None) -> list[Intent]:
    """Stage I: request templates, each with the instance parameters it proposes and their values."""
    prompt = load_prompt("intents.md", prompts_dir).format(domain=domain, subcategory=subcategory, n=n)
    answer = constructor.complete([{"role": "user", "content": prompt}])
    match = re.search(r"\[.*\]", answer, re.DOTALL)
    try:
        items = json.loads(match.group(0)) if match else None
    except json.JSONDecodeError:
        items = None
    found = [_intent(i) for i in items] if isinstance(items, list) else [None]
    intents = [intent for intent in found if intent is not None]
    if len(intents) < len(found):
        raise ConstructorError(
            'Stage I answer is not a JSON list of {"request": ..., "parameters": [{"name", "values", '
            f'"changes"}}]}} objects: {answer[:200]!r}'
        )
    return intents[:n]


def oracle_trace(task: Task, scale: str, seed: int, max_calls: int = 40) -> str:
    """Run the oracle and describe what it did: its tool calls, and the traceback if it raised."""
    lines = []
    try:
        env = task.instantiate(scale, seed)
    except Exception:  # noqa: BLE001 - a made task's generator may raise anything: its traceback is the report
        return "the environment could not be built:\n" + traceback.format_exc(limit=6)
    try:
        answer = task.oracle(env.tools)
        lines.append(f"final response: {answer!r:.300}")
        lines.append(env.verify(answer).summary())
    except Exception:  # noqa: BLE001 - a made task's oracle may raise anything: its traceback is the report
        lines.append("the oracle raised:\n" + traceback.format_exc(limit=6))
    finally:
        calls = env.call_log
        env.close()
    shown = [
        f"  {c.name}({json.dumps(c.arguments)[:120]}) -> {'ok' if c.ok else 'ERROR ' + str(c.error)[:160]}"
        for c in calls[:max_calls]
    ]
    more = [f"  ... {len(calls) - max_calls} more calls"] if len(calls) > max_calls else []
    return "\n".join([f"{len(calls)} tool calls:"] + shown + more + lines)


def _report_text(report: CertifyReport) -> str:
    return "\n".join(f"- {c.scale} seed {c.seed}: {c.name} failed: {c.detail}" for c in report.failures()[:30])


def _example_task(root: Path) -> str:
    return "\n".join(f"=== FILE: {name} ===\n{(root / name).read_text()}" for name in REQUIRED_FILES)


def construct_task(
    constructor: Constructor,
    domain: str,
    subcategory: str,
    intent: Intent | str,
    task_id: str,
    staging_root: Path,
    out_root: Path,
    example: Path,
    max_repairs: int = 3,
    scales=SCALES,
    seeds=(0, 1),
    prompts_dir=None,
    require_parameters: bool = True,
) -> Candidate:
    """Build one candidate, certify it, repair it until it passes or the rounds run out.

    With `require_parameters` a candidate that draws no instance parameters is sent back for repair like any
    other failure: one fixed program would pass all of its instances."""
    intent = intent if isinstance(intent, Intent) else Intent(intent)
    staging = staging_root / task_id
    candidate = Candidate(task_id, intent.request, str(staging), parameters=intent.parameters)
    messages = [
        {
            "role": "user",
            "content": load_prompt("construct.md", prompts_dir).format(
                domain=domain,
                subcategory=subcategory,
                intent=intent.request,
                task_id=task_id,
                parameters=intent.describe_parameters(),
                example=_example_task(example),
            ),
        }
    ]
    for round_ in range(max_repairs + 1):
        answer = constructor.complete(messages)
        messages.append({"role": "assistant", "content": answer})
        files = parse_files(answer)
        if staging.exists():
            shutil.rmtree(staging)
        staging.mkdir(parents=True)
        for name, text in files.items():
            if name in REQUIRED_FILES or name == "near_miss.py":
                (staging / name).write_text(text)
        missing = [f for f in REQUIRED_FILES if f not in files]
        trace_scale, trace_seed = scales[-1], seeds[0]
        try:
            if missing:
                raise TaskLoadError(f"the answer lacks {', '.join(missing)}")
            task = load_task(staging)
            report = certify_task(task, scales, seeds)
            problems = [f"{c.scale}/{c.seed} {c.name}: {c.detail}" for c in report.failures()]
            if require_parameters and not task.parametrised:
                problems.append(
                    "all/- params: generator.py defines no params(ctx), so one fixed program passes every "
                    "instance; draw the request's parameters and name them in prompt.md as {name}"
                )
            failed = report.failures()
            if failed:
                trace_scale, trace_seed = (
                    failed[0].scale if failed[0].scale in SCALES else trace_scale,
                    failed[0].seed or 0,
                )
            trace = oracle_trace(task, trace_scale, trace_seed) if problems else ""
            report_text = _report_text(report) + (
                "\n- " + problems[-1] if require_parameters and not task.parametrised else ""
            )
        except Exception as exc:  # noqa: BLE001 - a candidate that does not even load is repaired like any other
            problems = [f"{type(exc).__name__}: {exc}"]
            report_text, trace = problems[0], "(the task did not load, so the oracle did not run)"
        candidate.attempts.append(Attempt(round_, not problems, problems[:20]))
        if not problems:
            candidate.certified = True
            target = out_root / task_id
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(staging, target)
            candidate.output = str(target)
            return candidate
        messages.append(
            {
                "role": "user",
                "content": load_prompt("repair.md", prompts_dir).format(
                    report=report_text, scale=trace_scale, seed=trace_seed, trace=trace
                ),
            }
        )
    return candidate


def slugify(text: str, limit: int = 40) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")[:limit].rstrip("_") or "task"


def synthesize(
    constructor: Constructor,
    domain: str,
    subcategory: str,
    n_intents: int,
    staging_root: str | Path,
    out_root: str | Path,
    example: str | Path = "tasks/retail/restock_orders",
    max_repairs: int = 3,
    scales=SCALES,
    seeds=(0, 1),
    prompts_dir=None,
    progress: bool = True,
) -> list[Candidate]:
    """The whole pipeline for one domain and subcategory; writes synth_report.json in staging_root."""
    from tqdm.auto import tqdm

    staging_root, out_root = Path(staging_root), Path(out_root)
    intents = propose_intents(constructor, domain, subcategory, n_intents, prompts_dir)
    candidates = []
    for intent in tqdm(intents, desc=f"synth {domain}", unit="task", disable=not progress):
        task_id = f"{slugify(domain)}/{slugify(intent.request)}"
        candidates.append(
            construct_task(
                constructor,
                domain,
                subcategory,
                intent,
                task_id,
                staging_root,
                out_root,
                Path(example),
                max_repairs,
                scales,
                seeds,
                prompts_dir,
            )
        )
    staging_root.mkdir(parents=True, exist_ok=True)
    (staging_root / "synth_report.json").write_text(json.dumps([asdict(c) for c in candidates], indent=2))
    return candidates
