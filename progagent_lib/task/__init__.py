"""The native task format: tools, environments, verifiers, generators and task loading."""

from .environment import Environment, ToolCallRecord
from .pagination import DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, paginate
from .scales import FILE_MULTIPLIER, ROW_MULTIPLIER, SCALES, parse_scales
from .task import (
    GenContext,
    GenerationError,
    Task,
    TaskLoadError,
    find_task_dirs,
    load_pool,
    load_pool_report,
    load_task,
    state_fingerprint,
)
from .toolbox import ToolBox
from .tools import ToolDefinitionError, ToolError, ToolSpec, build_spec, tool
from .verification import VerifierError
from .verifier import Criterion, VerifyResult
from .workspace import WorkspaceEnvironment

__all__ = [
    "Environment",
    "ToolBox",
    "ToolCallRecord",
    "VerifierError",
    "paginate",
    "DEFAULT_PAGE_SIZE",
    "MAX_PAGE_SIZE",
    "SCALES",
    "ROW_MULTIPLIER",
    "FILE_MULTIPLIER",
    "parse_scales",
    "GenContext",
    "GenerationError",
    "Task",
    "TaskLoadError",
    "find_task_dirs",
    "load_pool",
    "load_pool_report",
    "load_task",
    "state_fingerprint",
    "ToolDefinitionError",
    "ToolError",
    "ToolSpec",
    "build_spec",
    "tool",
    "Criterion",
    "VerifyResult",
    "WorkspaceEnvironment",
]
