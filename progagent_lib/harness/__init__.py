"""Harnesses (DTC, PTC, Hybrid), the tool-call session, parsing, the episode loop and trajectories."""

from .end_reasons import END_REASONS, is_errored, is_truncated
from ..errors import PolicyError
from .episode import Episode, Limits, cut_observation, run_episode
from .metrics import ProgramStructure, TokenCounter, analyze_program, approximate_tokens
from .parsing import ParsedTurn, parse_tool_calls
from .session import Observation, Session
from .spec import CLAIM_DONE, HARNESSES, PROGRAMMATIC_TOOL_CALL, TERMINAL, HarnessSpec, get_harness, model_tool_schemas
from .trajectory import CallRecord, Trajectory, messages_for_chat_template, read_jsonl, write_jsonl
from .turn import ToolCall, Turn
from .view import show_in_notebooks

show_in_notebooks()  # inside IPython (a notebook), a Trajectory shows as its HTML view

__all__ = [
    "END_REASONS",
    "is_errored",
    "is_truncated",
    "Episode",
    "Limits",
    "PolicyError",
    "cut_observation",
    "run_episode",
    "ProgramStructure",
    "TokenCounter",
    "analyze_program",
    "approximate_tokens",
    "ParsedTurn",
    "parse_tool_calls",
    "Observation",
    "Session",
    "ToolCall",
    "Turn",
    "CLAIM_DONE",
    "HARNESSES",
    "PROGRAMMATIC_TOOL_CALL",
    "TERMINAL",
    "HarnessSpec",
    "get_harness",
    "model_tool_schemas",
    "CallRecord",
    "Trajectory",
    "messages_for_chat_template",
    "read_jsonl",
    "write_jsonl",
]
