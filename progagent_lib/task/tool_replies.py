"""What the host hands back for a tool call: its result as compact JSON text (`result_json`, the form the tool
bridge sends to the kernel and the call log measures), or its error message cut to a bound (`bounded_text`)."""

from __future__ import annotations

import json
from json.encoder import c_make_encoder, encode_basestring_ascii  # type: ignore[attr-defined]  # not in typeshed
from typing import Any

MAX_ERROR_CHARS = 2_000  # characters of a tool's error message that reach the model


def bounded_text(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """`text` cut to `limit` characters (head and tail kept) with a visible marker."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters cut ...]\n{text[-half:]}"


# A tool's result as JSON, by the C encoder directly (json.dumps builds an encoder object per call):
# compact, ASCII only, `str()` of any value JSON has no form for, NaN and infinities as Python's json
# writes them. No cycle check (a cycle in the checker's dict would outlive an encoding that failed): a
# result that contains itself ends in RecursionError instead, which fails the call.
_result_encoder = (
    c_make_encoder(None, str, encode_basestring_ascii, None, ":", ",", False, False, True)
    if c_make_encoder is not None
    else None
)


def result_json(value: Any) -> str:
    """`value` as compact ASCII JSON text (`str()` of what JSON cannot hold), the form the tool bridge sends."""
    if _result_encoder is None:
        return json.dumps(value, default=str, separators=(",", ":"))
    return "".join(_result_encoder(value, 0))
