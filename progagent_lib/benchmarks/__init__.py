"""External benchmarks played under every harness and scored by their own checkers (`progagent bench`).

A suite is registered in `base.SUITES` by name and imported only when used, so `progagent bench list` works without
it installed. `base` holds the adapter (an external task as our `Task`, its tools as an `Environment`'s), `agentdojo`
the AgentDojo suite, `bfcl` BFCL's multi-turn categories (scripted user turns), `ground_truth` the reference-replaying policies (the reference, and one fixed reference per part: the memorization
baseline), `run` the batch and its table, `compare` the cross-harness table of several policies.
"""

from .base import (
    SUITES,
    Benchmark,
    BenchmarkError,
    ExternalEnvironment,
    ExternalTask,
    ExternalTool,
    Reference,
    list_suites,
    load_suite,
)
from .compare import compare_policies, comparison_table
from .ground_truth import FixedReferencePolicy, GroundTruthPolicy
from .run import BenchResult, bench_frame, bench_table, failing, run_benchmark

__all__ = [
    "SUITES",
    "Benchmark",
    "BenchmarkError",
    "BenchResult",
    "ExternalEnvironment",
    "ExternalTask",
    "ExternalTool",
    "FixedReferencePolicy",
    "GroundTruthPolicy",
    "Reference",
    "bench_frame",
    "bench_table",
    "compare_policies",
    "comparison_table",
    "failing",
    "list_suites",
    "load_suite",
    "run_benchmark",
]
