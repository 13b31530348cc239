"""Error detection modes: how a failing tool shows to the program and to the model.

One module for the modes and the detector, used by the kernel's tool router (`bridge.ToolRouter`)
and by the harness session's direct task-tool calls, so both paths flag the same payloads:

- `is_error` (the paper's): a failure the tool reports (MCP `isError`, `ToolError`) is an error;
- `off` (the paper's ablation): failures come back as ordinary results;
- `detect` (beyond the paper): also flags error-shaped payloads from servers that omit `isError`.
"""

from __future__ import annotations

import json
import re
from typing import Any

ERROR_MODES = ("is_error", "off", "detect")


def check_error_mode(error_mode: str) -> str:
    """`error_mode` if it is one of ERROR_MODES, else a ValueError naming them."""
    if error_mode not in ERROR_MODES:
        raise ValueError(f"error_mode must be one of {ERROR_MODES}, got {error_mode!r}")
    return error_mode


# --- error-shaped payloads (error_mode="detect") -------------------------------------------------------
_ERROR_TEXT = re.compile(
    r"^\s*(?:(?:error|exception|fatal|failed|failure)\s*[:!\-]"  # "Error: ...", "ERROR - ...", not "errors were"
    r"|traceback \(most recent call last\)"
    r"|\[(?:error|err|fatal)\]"
    r"|\d{3} (?:bad request|unauthorized|forbidden|not found|internal server error|service unavailable)\b)",
    re.IGNORECASE,
)
_ERROR_KEYS = ("error", "errors", "error_message", "errormessage", "err", "exception", "fault")
_STATUS_ERROR_VALUES = {"error", "failed", "failure", "fail"}


def looks_like_error(result: Any) -> str | None:
    """The error message if `result` is shaped like a failure report from a server that omits isError.

    Recognised: strings that start like an error ("Error: ...", "Traceback (most recent call last)",
    "404 Not Found"); objects whose only meaningful content is an error (`{"error": ...}` with a
    non-empty value, `{"success": false, ...}`, `{"ok": false, ...}`, `{"status": "error", ...}`).
    A record that merely has an `error`-like field next to ordinary data (e.g. `{"id": 3, "error_rate": 0.1}`)
    is not an error: only exact keys count, and an empty/None/False value does not.
    """
    if isinstance(result, str):
        head = result.lstrip()[:200]
        return result.strip() if _ERROR_TEXT.match(head) else None
    if isinstance(result, dict):
        lowered = {str(k).lower(): v for k, v in result.items()}
        for key in _ERROR_KEYS:
            value = lowered.get(key)
            if value not in (None, "", False, [], {}, 0):
                return value if isinstance(value, str) else json.dumps(value, default=str)[:500]
        for key in ("success", "ok"):
            if lowered.get(key) is False:
                message = lowered.get("message") or lowered.get("detail") or lowered.get("reason")
                return str(message) if message else json.dumps(result, default=str)[:500]
        status = lowered.get("status")
        if isinstance(status, str) and status.lower() in _STATUS_ERROR_VALUES:
            message = lowered.get("message") or lowered.get("detail") or lowered.get("reason")
            return str(message) if message else json.dumps(result, default=str)[:500]
        if lowered.get("iserror") is True or lowered.get("is_error") is True:
            return json.dumps(result, default=str)[:500]
    return None
