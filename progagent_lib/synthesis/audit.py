"""Independent audit of a task: consistency across scales, and an independent solver at v3.

The consistency checks need no model: the instruction and tool schemas are the same at every scale,
each table declared in task.toml grows by the scale's row multiplier, and the workspace grows. The
solver check runs any policy under PTC at the largest scale and records whether it reached R = 1; a
failing independent solver is a flag for a person to look at, not proof that the task is broken.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from ..task import ROW_MULTIPLIER, SCALES


@dataclass
class AuditFinding:
    check: str
    passed: bool
    detail: str = ""


@dataclass
class AuditReport:
    task_id: str
    findings: list[AuditFinding] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return all(f.passed for f in self.findings)


def _table_rows(db_path, table: str) -> int | None:
    con = sqlite3.connect(db_path)
    try:
        return con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
    except sqlite3.Error:
        return None
    finally:
        con.close()


def audit_task(task: Any, policy: Any | None = None, *, seed: int = 0, solver_scale: str = "v3") -> AuditReport:
    """Consistency checks across v0..v3, and (when a policy is given) an independent PTC solve at v3."""
    report = AuditReport(task.id)
    prompts, schemas, files, rows = set(), set(), {}, {}
    for scale in SCALES:
        env = task.instantiate(scale, seed)
        try:
            prompts.add(task.prompt)
            schemas.add(json.dumps(env.tool_schemas(), sort_keys=True))
            files[scale] = sum(1 for p in env.workspace.rglob("*") if p.is_file())
            rows[scale] = {t: _table_rows(env.db_path, t) for t in task.config.get("tables", {})}
        finally:
            env.close()
    report.findings.append(AuditFinding("same_instruction_and_tools", len(prompts) == 1 and len(schemas) == 1))
    for table in task.config.get("tables", {}):
        counts = {s: rows[s][table] for s in SCALES}
        known = {s: c for s, c in counts.items() if c is not None}
        if len(known) < len(counts) or not known["v0"]:
            continue  # a size knob for generated rows, not a table of that name
        # A declared table grows by about the scale's multiplier (generators may add or drop a few rows).
        ratios = {s: known[s] / known["v0"] for s in SCALES}
        grows = all(0.75 * ROW_MULTIPLIER[s] <= ratios[s] <= 1.33 * ROW_MULTIPLIER[s] for s in SCALES)
        report.findings.append(AuditFinding(f"table_{table}_scales", grows, f"rows per scale {counts}"))
    report.findings.append(AuditFinding("workspace_grows", files["v3"] > files["v0"], f"files per scale {files}"))
    if policy is not None:
        from ..harness.episode import run_episode
        from ..harness.spec import DEFAULT_HARNESS

        trajectory = run_episode(task, solver_scale, seed, DEFAULT_HARNESS, policy)
        report.findings.append(
            AuditFinding(
                "independent_solver",
                trajectory.reward == 1.0,
                f"R={trajectory.reward}, R~={trajectory.score:.2f}, ended by {trajectory.end_reason}",
            )
        )
    return report
