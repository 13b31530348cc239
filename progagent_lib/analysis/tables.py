"""Small polars tables the notebooks show: a task's tools and workspace, a verdict, program structures."""

from __future__ import annotations

from typing import Any, Iterable, cast

import polars as pl

CONSTRUCTS = {
    "loops": "loop",
    "conditionals": "conditional",
    "try_blocks": "try/except",
    "comprehensions": "comprehension",
    "functions": "function",
}


def tools_table(tool_schemas: list[dict]) -> pl.DataFrame:
    """One row per tool: name, parameters, the first line of its description."""
    return pl.DataFrame(
        [
            {
                "tool": s["function"]["name"],
                "parameters": ", ".join(s["function"]["parameters"].get("properties", {})),
                "description": s["function"]["description"].splitlines()[0],
            }
            for s in tool_schemas
        ]
    )


def workspace_table(workspace) -> pl.DataFrame:
    """The workspace's files with their sizes."""
    files = sorted(p for p in workspace.rglob("*") if p.is_file())
    return pl.DataFrame(
        {"path": [str(p.relative_to(workspace)) for p in files], "bytes": [p.stat().st_size for p in files]},
        schema={"path": pl.String, "bytes": pl.Int64},
    )


def criteria_table(result: Any) -> pl.DataFrame:
    """A VerifyResult (or its dict form) as one row per criterion."""
    criteria = result.to_dict()["criteria"] if hasattr(result, "to_dict") else result["criteria"]
    return pl.DataFrame(criteria).select("name", "passed", "weight", "detail")


def program_structure_shares(trajectories: Iterable[Any], source: str) -> pl.DataFrame:
    """Share of the (parseable) programs in `trajectories` that use each construct, plus the DTC-like share."""
    from ..harness.summary import programs_frame

    programs = programs_frame(trajectories)
    programs = programs.filter(pl.col("parsed")) if programs.height else programs
    rows = [
        {
            "source": source,
            "construct": label,
            "share": cast(float, (programs[column] > 0).mean()) if programs.height else 0.0,  # of a bool column
        }
        for column, label in CONSTRUCTS.items()
    ]
    rows.append(
        {
            "source": source,
            "construct": "DTC-like",
            "share": cast(float, programs["dtc_like"].mean()) if programs.height else 0.0,
        }
    )
    return pl.DataFrame(rows)
