"""Harnesses (DTC, PTC, Hybrid), the tool-call session, parsing, the episode loop and trajectories."""
from .parsing import ParsedTurn, parse_tool_calls
from .session import Observation, Session, ToolCall
from .spec import CLAIM_DONE, HARNESSES, PROGRAMMATIC_TOOL_CALL, TERMINAL, HarnessSpec, get_harness, model_tool_schemas

__all__ = [
    "ParsedTurn", "parse_tool_calls", "Observation", "Session", "ToolCall", "CLAIM_DONE", "HARNESSES",
    "PROGRAMMATIC_TOOL_CALL", "TERMINAL", "HarnessSpec", "get_harness", "model_tool_schemas",
]
