"""The four environment scales (the paper's Stage V)."""

from __future__ import annotations

SCALES = ("v0", "v1", "v2", "v3")
ROW_MULTIPLIER = {"v0": 1, "v1": 2, "v2": 4, "v3": 8}
FILE_MULTIPLIER = {"v0": 1, "v1": 2, "v2": 3, "v3": 4}


def check_scale(scale: str) -> str:
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; expected one of {', '.join(SCALES)}")
    return scale


def parse_scales(text: str | None) -> list[str]:
    """'v0,v2' -> ['v0', 'v2']; None or 'all' -> all four."""
    if not text or text == "all":
        return list(SCALES)
    return [check_scale(s.strip()) for s in text.split(",") if s.strip()]
