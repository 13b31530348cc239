"""Trajectories as a table for the ecosystem: one row per episode, loadable by Hugging Face `datasets`.

    progagent export trajectories runs/teacher.jsonl --format parquet -o teacher.parquet
    progagent export trajectories runs/teacher.jsonl --format hf -o teacher_dataset

A row holds the chat (`messages`: role/content dicts, assistant tool calls and tool results as recorded, the
arguments as the JSON string OpenAI's format carries), the tool schemas the model saw (`tools`, a JSON string:
schemas differ from task to task and would not share one Arrow type), the verdict (`reward` R, `score` R~) and the
episode's metrics. `parquet` writes one file (`datasets.load_dataset("parquet", data_files=OUT)`), `hf` a folder
(`datasets.load_from_disk(OUT)`). Rows are written in batches, so a large file is never held whole.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any, Iterable, Iterator

from .metrics import EPISODE_METRICS, episode_report
from .trajectory import Trajectory

FORMATS = ("parquet", "hf")
BATCH_ROWS = 256  # rows per written batch: bounds memory whatever the file's size
MESSAGE_KEYS = ("role", "content", "reasoning_content", "tool_calls", "tool_call_id", "name")


class ExportError(ValueError):
    """The export cannot be made as asked (no trajectory, an existing output, an unknown format)."""


def stage_of(policy: str) -> str | None:
    """The training stage an episode's policy names, if any: the evaluation labels its policy `hf:<model>@<stage>`
    (`sft-ptc`, `gspo-dtc`, ...) and the memorization baseline `memorize:...`. A numeric suffix is a model's
    context length (`model@32768`), not a stage."""
    if policy.startswith("memorize:"):
        return "memorize"
    _, at, suffix = policy.rpartition("@")
    return suffix if at and suffix and not suffix.isdigit() else None


def verdict_of(trajectory: Trajectory) -> str:
    """pass (R = 1), fail, or errored (the policy or its server failed: not the task's verdict)."""
    if trajectory.errored:
        return "errored"
    return "pass" if trajectory.reward == 1 else "fail"


def episode_overview(t: Trajectory) -> dict[str, Any]:
    """The episode's identity, verdict and report (`metrics.episode_report`): the viewer's list and the exported rows."""
    return {
        "task_id": t.task_id,
        "harness": t.harness,
        "stage": stage_of(t.policy),
        "policy": t.policy,
        "scale": t.scale,
        "seed": t.seed,
        "sample": t.sample,
        "verdict": verdict_of(t),
        "end_reason": t.end_reason,
        **episode_report(t),
    }


def episode_row(t: Trajectory) -> dict[str, Any]:
    """One table row: the metrics, the chat, the tool schemas, the instance and the final answer."""
    return {
        **episode_overview(t),
        "messages": [_message(m) for m in t.messages],
        "tools": json.dumps(t.tools, ensure_ascii=False),
        "instruction": t.instruction,
        "params": json.dumps(t.params, ensure_ascii=False),
        "final_answer": t.final_answer,
    }


def _message(message: dict) -> dict:
    """A chat message in the table's one message type (keys outside MESSAGE_KEYS are not kept)."""
    calls = message.get("tool_calls")
    return {
        "role": _text(message.get("role")),
        "content": _text(message.get("content")),
        "reasoning_content": _text(message.get("reasoning_content")),
        "tool_calls": [_tool_call(c) for c in calls] if calls else None,
        "tool_call_id": _text(message.get("tool_call_id")),
        "name": _text(message.get("name")),
    }


def _tool_call(call: dict) -> dict:
    function = call.get("function") or {}
    arguments = function.get("arguments")
    return {
        "id": _text(call.get("id")),
        "type": _text(call.get("type")),
        "function": {
            "name": _text(function.get("name")),
            "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False),
        },
    }


def _text(value: Any) -> str | None:
    """A string field as a string: None stays None, anything else (a list of content parts) becomes its JSON."""
    return value if value is None or isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def row_schema():
    """The Arrow schema of a row (fixed, so every batch and every file share it)."""
    import pyarrow as pa

    text = pa.string()
    tool_call = pa.struct(
        [("id", text), ("type", text), ("function", pa.struct([("name", text), ("arguments", text)]))]
    )
    message = pa.struct(
        [
            ("role", text),
            ("content", text),
            ("reasoning_content", text),
            ("tool_calls", pa.list_(tool_call)),
            ("tool_call_id", text),
            ("name", text),
        ]
    )
    return pa.schema(
        [
            ("task_id", text),
            ("harness", text),
            ("stage", text),
            ("policy", text),
            ("scale", text),
            ("seed", pa.int64()),
            ("sample", pa.int64()),
            ("verdict", text),
            ("end_reason", text),
            ("reward", pa.float64()),
            ("score", pa.float64()),
            *((name, pa.int64()) for name in EPISODE_METRICS),
            ("messages", pa.list_(message)),
            ("tools", text),
            ("instruction", text),
            ("params", text),
            ("final_answer", text),
        ]
    )


def _batches(trajectories: Iterable[Trajectory]) -> Iterator[list[dict]]:
    batch: list[dict] = []
    for trajectory in trajectories:
        batch.append(episode_row(trajectory))
        if len(batch) == BATCH_ROWS:
            yield batch
            batch = []
    if batch:
        yield batch


def write_parquet(trajectories: Iterable[Trajectory], out: Path) -> int:
    """Rows to one parquet file, batch by batch; the number of rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema, rows = row_schema(), 0
    with pq.ParquetWriter(out, schema) as writer:
        for batch in _batches(trajectories):
            writer.write_table(pa.Table.from_pylist(batch, schema=schema))
            rows += len(batch)
    return rows


def write_hf(trajectories: Iterable[Trajectory], out: Path) -> int:
    """Rows to a `datasets` folder (`Dataset.save_to_disk`), through a parquet file in a scratch folder."""
    import datasets

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # two bars for one copy of a finished file say nothing
    try:
        with tempfile.TemporaryDirectory(prefix="progagent-export-") as scratch:
            table = Path(scratch) / "episodes.parquet"
            rows = write_parquet(trajectories, table)
            if rows:
                dataset = datasets.Dataset.from_parquet(str(table), cache_dir=str(Path(scratch) / "cache"))
                dataset.save_to_disk(str(out))
    finally:
        if bars:
            datasets.enable_progress_bars()
    return rows


def export_trajectories(
    trajectories: Iterable[Trajectory], out: str | Path, fmt: str, *, overwrite: bool = False
) -> int:
    """`trajectories` (e.g. `iter_jsonl(path)`, read as they are written) as a table at `out` in `fmt` (parquet |
    hf); the rows written. The output appears only when complete (written beside it first), so a failed export
    leaves an earlier one in place."""
    out = Path(out)
    if fmt not in FORMATS:
        raise ExportError(f"unknown format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if out.exists() and not overwrite:
        raise ExportError(f"{out} exists: choose another output or pass --overwrite")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    _remove(partial)
    try:
        rows = (write_parquet if fmt == "parquet" else write_hf)(trajectories, partial)
        if not rows:
            raise ExportError(
                "no trajectory to export (the file holds none, or only lines that are not whole "
                "trajectories): nothing was written"
            )
        _remove(out)
        partial.rename(out)
    finally:
        _remove(partial)
    return rows


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)
