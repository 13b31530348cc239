"""A labelled set of tool results, to measure `error_mode="detect"` (see `looks_like_error`).

Errors are shapes that real servers return without setting isError (REST wrappers, scraped CLIs,
hand-written MCP servers); non-errors are ordinary results, several of them deliberately close to
an error (a field named `error_rate`, a log line that mentions an error, a ticket titled "Error in
invoice", `{"errors": []}`, a status of "resolved").
"""

from __future__ import annotations

from dataclasses import dataclass

from .error_modes import looks_like_error

ERRORS = [
    {"error": "invoice 42 not found"},
    {"error": {"code": 404, "message": "not found"}},
    {"errors": [{"message": "field 'date' is required"}]},
    {"success": False, "message": "permission denied"},
    {"ok": False, "reason": "rate limited"},
    {"status": "error", "message": "upstream timeout"},
    {"status": "failed", "detail": "disk full"},
    {"isError": True, "content": "bad request"},
    {"error_message": "quota exceeded"},
    {"Error": "Unknown column 'foo'"},
    {"exception": "ValueError: bad date"},
    {"fault": "Server.Timeout"},
    "Error: no such table: orders",
    "ERROR - connection refused",
    "error: unknown option --foo",
    'Traceback (most recent call last):\n  File "x.py", line 1\nZeroDivisionError: division by zero',
    "Exception: the service is unavailable",
    "404 Not Found",
    "500 Internal Server Error",
    "Failed: the record is locked by another user",
    "[ERROR] invalid credentials",
    "Fatal: repository not found",
    {"status": "FAILURE", "message": "job crashed"},
    {"success": False},
]

NON_ERRORS = [
    {"id": 3, "name": "Widget", "error_rate": 0.02},
    {"errors": []},
    {"error": None, "items": [1, 2, 3]},
    {"error": "", "total": 10},
    {"status": "resolved", "ticket": 12},
    {"status": "open", "title": "Error in invoice 7"},
    {"ok": True, "value": 5},
    {"success": True, "order_id": 9},
    {"items": [{"id": 1, "error_code": "E12"}], "page": 1},
    {"message": "Error budget is 99.9%", "sla": "gold"},
    "The report lists every error found last week.",
    "errors were fixed in release 2.1",
    "Order 17 shipped; no errors.",
    "ID,error_count\n1,0\n2,3",
    "Subject: Error in March invoice\nHi team, ...",
    "",
    "ok",
    [{"error": "x"}],
    42,
    None,
    {"page": 2, "items": [], "has_more": False},
    {"log": "ERROR at 10:02 disk warning", "host": "db1"},
    "Errors and omissions excepted (E&OE).",
    {"exception_count": 2, "service": "api"},
    "failure modes are listed in the appendix",
]


@dataclass
class DetectionReport:
    detected: int
    errors: int
    false_positives: int
    non_errors: int
    missed: list
    false_alarms: list

    @property
    def detection_rate(self) -> float:
        return self.detected / self.errors

    @property
    def false_positive_rate(self) -> float:
        return self.false_positives / self.non_errors


def evaluate_detection() -> DetectionReport:
    missed = [p for p in ERRORS if looks_like_error(p) is None]
    false_alarms = [p for p in NON_ERRORS if looks_like_error(p) is not None]
    return DetectionReport(
        len(ERRORS) - len(missed), len(ERRORS), len(false_alarms), len(NON_ERRORS), missed, false_alarms
    )
