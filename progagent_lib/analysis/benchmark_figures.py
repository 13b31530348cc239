"""The figure of the cross-harness table on external suites (`benchmarks.compare.comparison_table`, notebook 09)."""

from __future__ import annotations

import altair as alt
import polars as pl

from .style import harness_color, harness_order


def comparison_chart(table: pl.DataFrame, title: str = "External suites: pass rate by policy and harness") -> alt.Chart:
    """Pass rate (the suite's own checker) per policy, one bar per harness, a panel per suite, 95% intervals."""
    data = table.select(["suite", "policy", "harness", "pass_rate", "pass_low", "pass_high", "tasks"]).to_pandas()
    policies = list(dict.fromkeys(table["policy"].to_list()))
    base = alt.Chart(data).encode(
        y=alt.Y("policy:N", sort=policies, title=None), yOffset=alt.YOffset("harness:N", sort=harness_order())
    )
    bars = base.mark_bar().encode(
        x=alt.X("pass_rate:Q", title="pass rate (suite's checker)", scale=alt.Scale(domain=[0, 1])),
        color=harness_color(table),
        tooltip=["suite", "policy", "harness", "tasks", "pass_rate", "pass_low", "pass_high"],
    )
    rules = base.mark_rule(color="black").encode(x="pass_low:Q", x2="pass_high:Q")
    return (
        (bars + rules)
        .properties(width=260, height=alt.Step(9))
        .facet(column=alt.Column("suite:N", title=None))
        .properties(title=title)
    )


__all__ = ["comparison_chart"]
