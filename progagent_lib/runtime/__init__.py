"""The PTC runtime: a confined persistent IPython kernel per episode, with the episode's tools inside.

from progagent_lib.runtime import PTCRuntime
with PTCRuntime(env, error_mode="is_error") as rt:
    r = rt.execute("rows = tools.list_products(page=1)\\nprint(len(rows['items']))", timeout=30)
    r.output, r.error, r.timed_out, r.truncated, r.tool_calls
"""

from .bridge import BridgeCall, ToolRouter
from .error_modes import ERROR_MODES, looks_like_error
from .kernel import KernelSession, KernelStartError
from .pool import KernelPool
from .ptc import ErrorInfo, ExecutionResult, PTCRuntime
from .sandbox import ProcessLimits, Sandbox, SandboxUnavailable, check_available
from .terminal import TerminalResult, run_terminal

__all__ = [
    "PTCRuntime",
    "ExecutionResult",
    "ErrorInfo",
    "BridgeCall",
    "ToolRouter",
    "ERROR_MODES",
    "looks_like_error",
    "KernelPool",
    "KernelSession",
    "KernelStartError",
    "ProcessLimits",
    "Sandbox",
    "SandboxUnavailable",
    "check_available",
    "TerminalResult",
    "run_terminal",
]
