"""ProgAgent workbench: programmatic tool calling environments, runtime, harnesses and training."""

from .task import (
    Criterion,
    Environment,
    GenContext,
    SCALES,
    Task,
    TaskLoadError,
    ToolError,
    VerifyResult,
    WorkspaceEnvironment,
    load_pool,
    load_task,
    paginate,
    tool,
)

__version__ = "0.1.0"
__all__ = [
    "Criterion",
    "Environment",
    "GenContext",
    "SCALES",
    "Task",
    "TaskLoadError",
    "ToolError",
    "VerifyResult",
    "WorkspaceEnvironment",
    "load_pool",
    "load_task",
    "paginate",
    "tool",
]
