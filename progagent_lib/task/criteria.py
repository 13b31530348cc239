"""Ready criteria: an episode's final state compared with the reference state its task's oracle leaves.

A task author writes the expected result once, as the oracle's program (`reference.py` replays it), and builds the
verifier from comparisons, each a `Criterion` with a weight and a detail that says what differs:

    def criteria(self, answer):
        return [
            self.tables_match("purchase_orders", key="product_id", columns=["supplier_id", "quantity"],
                              where="status = 'open'", weight=2.0),
            self.file_matches(self.params["report_name"], as_="csv", key="sku"),
            self.answer_states(self.reference_total(), tolerance=0.01),
            self.nothing_else_changed(tables=["products", "suppliers"]),
        ]

Only the rules that cannot be a comparison (partial credit for respecting a notice, say) are written by hand.

Everything the episode wrote is hostile: files are read through the workspace's safe layer with a size bound, parsed
with bounded rows and nesting, and answers are scanned by a linear-time pattern; a file that cannot be parsed fails its
criterion with the reason as its detail. Values compare leniently where people write them differently: text ignores
case and surrounding spaces, numbers ignore thousands separators, currency signs and a trailing `%`, within a
tolerance.
"""

from __future__ import annotations

import csv
import json
import math
import re
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from .reference import Reference, ReferenceError, reference_dir
from .verifier import Criterion

if TYPE_CHECKING:
    from .safe_fs import WorkspaceFS

MAX_FILE_CHARS = 4 << 20  # characters of an episode's file a comparison reads
MAX_ROWS = 100_000  # rows of a table or a file a comparison reads
MAX_DETAIL_ITEMS = 4  # differences named in a criterion's detail
NUMBER_CELL = re.compile(r"\s*([-+]?)\s*[$£€]?\s*([-+]?)(\d[\d,]*(?:\.\d+)?|\.\d+)\s*%?\s*")
NUMBER_IN_TEXT = re.compile(r"(?<![\w.-])-?\d[\d,]*(?:\.\d+)?")  # not the parts of an id such as RC-26-123
ROW_FORMATS = ("csv", "md")
FILE_FORMATS = ROW_FORMATS + ("json", "lines")

Value = Any
Row = dict[str, Value]


class ParseError(ValueError):
    """An episode's file is not in the form the comparison reads; the message is the criterion's detail."""


# --- values ----------------------------------------------------------------------------------------------------
def normalise(value: Value) -> Value:
    """How a cell compares: numbers (also numeric text) as floats, other text stripped and case-folded."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        match = NUMBER_CELL.fullmatch(value) if len(value) < 64 else None
        if match:
            sign = "-" if "-" in (match.group(1) + match.group(2)) else ""
            return float(sign + match.group(3).replace(",", ""))
        return " ".join(value.split()).casefold()
    return value


def same_value(got: Value, want: Value, tolerance: float) -> bool:
    got, want = normalise(got), normalise(want)
    if isinstance(got, float) and isinstance(want, float):
        return math.isclose(got, want, abs_tol=tolerance, rel_tol=0.0) or got == want
    return got == want


def _key_of(row: Row, key: Sequence[str]) -> Value:
    values = tuple(normalise(row.get(k)) for k in key)
    return values[0] if len(values) == 1 else values


def _names(columns: str | Iterable[str] | None) -> list[str]:
    if columns is None:
        return []
    return [columns] if isinstance(columns, str) else list(columns)


def _display(key: Value) -> str:
    """A key as a detail shows it: whole numbers without a decimal point (ids read back from text are floats)."""
    if isinstance(key, tuple):
        return "(" + ", ".join(_display(k) for k in key) + ")"
    return str(int(key)) if isinstance(key, float) and key.is_integer() else repr(key)


def _listed(items: list[str]) -> str:
    shown = ", ".join(items[:MAX_DETAIL_ITEMS])
    return shown + (f" and {len(items) - MAX_DETAIL_ITEMS} more" if len(items) > MAX_DETAIL_ITEMS else "")


Tolerance = float | dict[str, float]  # one for every number, or one per column (columns not named: exact)


def tolerance_of(tolerance: Tolerance, column: str) -> float:
    return tolerance.get(column, 0.0) if isinstance(tolerance, dict) else tolerance


def compare_rows(
    got: list[Row], want: list[Row], key: Sequence[str], columns: Sequence[str], tolerance: Tolerance
) -> str | None:
    """None when `got` holds the rows of `want` (matched by `key`, compared on `columns`), else what differs."""
    if len(got) > MAX_ROWS:
        return f"more than {MAX_ROWS:,} rows"
    if not key:
        return _compare_unkeyed(got, want, columns, tolerance)
    mine: dict[Value, Row] = {}
    for row in got:
        k = _key_of(row, key)
        if k in mine:
            return f"{_display(k)} appears more than once"
        mine[k] = row
    expected = {_key_of(row, key): row for row in want}
    missing = [_display(k) for k in expected if k not in mine]
    extra = [_display(k) for k in mine if k not in expected]
    wrong = [
        f"{_display(k)} {c}={mine[k].get(c)!r} (expected {row.get(c)!r})"
        for k, row in expected.items()
        if k in mine
        for c in columns
        if not same_value(mine[k].get(c), row.get(c), tolerance_of(tolerance, c))
    ]
    problems = [
        f"missing {_listed(missing)}" if missing else "",
        f"unexpected {_listed(extra)}" if extra else "",
        f"differs: {_listed(wrong)}" if wrong else "",
    ]
    problems = [p for p in problems if p]
    return f"{len(got)} rows, {len(want)} expected; " + "; ".join(problems) if problems else None


def _compare_unkeyed(got: list[Row], want: list[Row], columns: Sequence[str], tolerance: Tolerance) -> str | None:
    def order(row: Row) -> tuple:
        return tuple(
            repr(round(v, 6)) if isinstance(v, float) else repr(v) for v in (normalise(row.get(c)) for c in columns)
        )

    if len(got) != len(want):
        return f"{len(got)} rows, {len(want)} expected"
    for mine, theirs in zip(sorted(got, key=order), sorted(want, key=order)):
        wrong = [c for c in columns if not same_value(mine.get(c), theirs.get(c), tolerance_of(tolerance, c))]
        if wrong:
            return (
                f"a row differs in {', '.join(wrong)}: {[mine.get(c) for c in wrong]!r:.200} "
                f"(expected {[theirs.get(c) for c in wrong]!r:.200})"
            )
    return None


# --- files -----------------------------------------------------------------------------------------------------
def header_name(text: str) -> str:
    """A column heading as compared: case-folded, inner spaces and hyphens as underscores."""
    return re.sub(r"[\s\-]+", "_", text.strip().casefold())


def parse_rows(text: str, as_: str) -> list[Row]:
    """The rows of a CSV file or of a Markdown file's first table, keyed by `header_name` of their headings."""
    lines = _table_lines(text) if as_ == "md" else text.splitlines()
    try:
        records = list(_bounded(csv.reader(lines) if as_ == "csv" else (_md_cells(line) for line in lines)))
    except csv.Error as exc:
        raise ParseError(f"not readable as CSV: {exc}") from None
    records = [r for r in records if any(cell.strip() for cell in r)]
    if not records:
        raise ParseError("holds no table" if as_ == "md" else "is empty")
    header = [header_name(h) for h in records[0]]
    return [dict(zip(header, (cell.strip() for cell in record))) for record in records[1:]]


def _bounded(records: Iterable[list[str]]) -> Iterable[list[str]]:
    for count, record in enumerate(records):
        if count > MAX_ROWS:
            raise ParseError(f"has more than {MAX_ROWS:,} rows")
        yield record


def _table_lines(text: str) -> list[str]:
    """The lines of the first Markdown table (`| a | b |` rows), without its `|---|` separator."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.strip().startswith("|"):
            if not set(line.strip()) <= set("|-: "):
                lines.append(line)
        elif lines:
            break
    return lines


def _md_cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"not valid JSON: {type(exc).__name__}: {str(exc)[:120]}") from None


def compare_json(got: Any, want: Any, key: Sequence[str], tolerance: float, where: str = "$") -> str | None:
    """None when two JSON values agree (lists of objects matched by `key` when given), else where they differ."""
    if isinstance(want, dict):
        if not isinstance(got, dict):
            return f"{where} is not an object"
        mine = {header_name(k): v for k, v in got.items()}
        for name, value in want.items():
            if header_name(name) not in mine:
                return f"{where} has no {name!r}"
            problem = compare_json(mine[header_name(name)], value, key, tolerance, f"{where}.{name}")
            if problem:
                return problem
        extra = sorted(set(mine) - {header_name(name) for name in want})
        return f"{where} has unexpected {_listed([repr(k) for k in extra])}" if extra else None
    if isinstance(want, list):
        if not isinstance(got, list):
            return f"{where} is not a list"
        if key and all(isinstance(v, dict) for v in want + got):
            lower = [{header_name(k): v for k, v in item.items()} for item in got]
            return _prefixed(
                where,
                compare_rows(
                    lower, [{header_name(k): v for k, v in item.items()} for item in want], key, [], tolerance
                ),
            ) or _members(lower, want, key, tolerance, where)
        if len(got) != len(want):
            return f"{where} has {len(got)} items, {len(want)} expected"
        return next(
            filter(
                None, (compare_json(g, w, key, tolerance, f"{where}[{i}]") for i, (g, w) in enumerate(zip(got, want)))
            ),
            None,
        )
    return None if same_value(got, want, tolerance) else f"{where} is {got!r:.80}, expected {want!r:.80}"


def _members(got: list[Row], want: list[dict], key: Sequence[str], tolerance: float, where: str) -> str | None:
    mine = {_key_of(row, key): row for row in got}
    for item in want:
        k = _key_of({header_name(n): v for n, v in item.items()}, key)
        problem = compare_json(mine[k], item, key, tolerance, f"{where}[{_display(k)}]")
        if problem:
            return problem
    return None


def _prefixed(where: str, problem: str | None) -> str | None:
    return f"{where}: {problem}" if problem else None


# --- the criteria ------------------------------------------------------------------------------------------------
class ReferenceCriteria:
    """Comparisons with the reference state, for an `Environment`'s criteria(): each returns one Criterion.

    Needs of the environment: `db`, `fs` (the workspace's safe file layer), and, for `reference`, `task`, `scale` and
    `seed` (set by `Task.instantiate`, and by the verifier's process).
    """

    final_answer: str = ""
    _reference: Reference | None = None
    # Given by `Environment` (annotations only: nothing is set here).
    db: sqlite3.Connection
    fs: WorkspaceFS

    if TYPE_CHECKING:  # the task's verifier, written in each `Environment` subclass

        def criteria(self, final_response: str) -> list[Criterion]: ...

    @property
    def reference(self) -> Reference:
        """The instance's reference state (`reference.Reference`): what the oracle left."""
        if self._reference is None:
            self._reference = Reference(self.prepare_reference())
        return self._reference

    def prepare_reference(self) -> Path:
        """Build the reference state if it is not in the cache yet (the host does so before a verification starts,
        outside its budget); its folder."""
        task, scale, seed = getattr(self, "task", None), getattr(self, "scale", None), getattr(self, "seed", None)
        if task is None or scale is None or seed is None or not hasattr(task, "source_bytes"):
            raise ReferenceError(
                "this environment was not instantiated from a task folder at a scale and seed, so it "
                "has no reference state; use Task.instantiate(scale, seed)"
            )
        return reference_dir(task, scale, seed)

    def use_reference(self, folder: Path) -> None:
        """Compare with the reference state in `folder` (data.db, workspace/, answer.txt), as a task exported without
        its oracle carries it (synthesis.export: Harbor's tests/reference)."""
        self.close_reference()
        self._reference = Reference(Path(folder))

    def run_criteria(self, final_answer: str) -> list[Criterion]:
        """criteria(final_answer), with the answer where `answer_states` reads it."""
        self.final_answer = final_answer
        return self.criteria(final_answer)

    def close_reference(self) -> None:
        if self._reference is not None:
            self._reference.close()
            self._reference = None

    def tables_match(
        self,
        table: str,
        *,
        key: str | Sequence[str],
        columns: str | Sequence[str] = (),
        where: str = "",
        criterion: str | None = None,
        weight: float = 1.0,
        tolerance: Tolerance = 1e-6,
    ) -> Criterion:
        """The rows of `table` (any FROM clause) that satisfy `where` are the reference's: the same `key`s, and on
        each the same `columns`. Text ignores case and spaces; numbers agree within `tolerance` (one for all, or
        `{column: tolerance}`)."""
        keys, compared = _names(key), _names(columns)
        selected = keys + compared  # expressions (`p.sku`), each read back under its own text
        sql = (
            f"SELECT {', '.join(f'{e} AS _c{i}' for i, e in enumerate(selected))} FROM {table}"
            + (f" WHERE {where}" if where else "")
            + f" LIMIT {MAX_ROWS + 1}"
        )

        def rows(cursor_rows: list) -> list[Row]:
            return [dict(zip(selected, tuple(row))) for row in cursor_rows]

        got = rows(self.db.execute(sql).fetchall())
        want = rows(self.reference.db.execute(sql).fetchall())
        problem = compare_rows(got, want, keys, compared, tolerance)
        name = criterion or f"{table.split()[0]}_match"
        return Criterion(name, problem is None, weight, problem or f"{len(want)} rows as expected")

    def file_matches(
        self,
        name: str,
        *,
        as_: str = "csv",
        key: str | Sequence[str] = (),
        columns: str | Sequence[str] | None = None,
        tolerance: Tolerance = 0.01,
        criterion: str | None = None,
        weight: float = 1.0,
    ) -> Criterion:
        """The workspace file `name` holds what the reference's does: for "csv" and "md" (its first table) the same
        rows, matched by `key` (else in any order) on `columns` (default: the reference's headings); for "json" the
        same values (lists of objects matched by `key`); for "lines" the same non-empty lines in any order."""
        if as_ not in FILE_FORMATS:
            raise ValueError(f"file_matches(as_={as_!r}): choose one of {', '.join(FILE_FORMATS)}")
        label = criterion or "report_written"
        expected = self.reference.read(name)
        if expected is None:
            raise ValueError(f"file_matches({name!r}): the reference solution wrote no such file")
        try:
            text = self.fs.read_text(name, MAX_FILE_CHARS)
        except Exception as exc:  # noqa: BLE001 - missing, too large, a link, not UTF-8: said in the detail
            return Criterion(label, False, weight, f"{name}: {str(exc)[:200] or type(exc).__name__}")
        try:
            problem = self._compare_file(text, expected, as_, _names(key), columns, tolerance)
        except ParseError as exc:
            problem = f"{name} {exc}"
        return Criterion(label, problem is None, weight, problem or f"{name} matches the expected result")

    @staticmethod
    def _compare_file(
        text: str, expected: str, as_: str, key: list[str], columns: Any, tolerance: Tolerance
    ) -> str | None:
        if as_ == "json":
            if isinstance(tolerance, dict):
                raise ValueError("file_matches(as_='json') takes one tolerance, not one per column")
            return compare_json(parse_json(text), json.loads(expected), [header_name(k) for k in key], tolerance)
        if as_ == "lines":
            got, want = ({normalise(line) for line in t.splitlines() if line.strip()} for t in (text, expected))
            return None if got == want else f"{len(got - want)} unexpected and {len(want - got)} missing lines"
        got_rows, want_rows = parse_rows(text, as_), parse_rows(expected, as_)
        compared = [header_name(c) for c in _names(columns)] or list(want_rows[0] if want_rows else [])
        keys = [header_name(k) for k in key]
        absent = [c for c in keys + compared if got_rows and c not in got_rows[0]]
        if absent:
            return f"no column {absent[0]!r} (columns: {', '.join(list(got_rows[0])[:12])})"
        if isinstance(tolerance, dict):
            tolerance = {header_name(c): t for c, t in tolerance.items()}
        return compare_rows(got_rows, want_rows, keys, [c for c in compared if c not in keys], tolerance)

    def answer_states(
        self,
        value: Any,
        *,
        tolerance: float = 0.01,
        any_of: bool = False,
        criterion: str | None = None,
        weight: float = 1.0,
    ) -> Criterion:
        """The final answer states `value`: a number (any number in the answer within `tolerance`), a text (contained,
        ignoring case and spacing), or a list of them (every one; with `any_of`, at least one, as for tied results)."""
        answer = self.final_answer
        values = value if isinstance(value, (list, tuple)) else [value]
        numbers = [float(m.group().replace(",", "")) for m in NUMBER_IN_TEXT.finditer(answer)]
        text = " ".join(answer.split()).casefold()
        missing = [v for v in values if not _stated(v, numbers, text, tolerance)]
        if any_of and len(missing) < len(values):
            missing = []
        shown = ", ".join(_shown(v) for v in values)
        detail = f"expected {'one of ' if any_of else ''}{shown}" + (
            f"; missing {', '.join(_shown(v) for v in missing)}" if missing else ""
        )
        return Criterion(criterion or "answer_states_result", not missing, weight, detail)

    def nothing_else_changed(
        self, tables: Sequence[str] | None = None, *, criterion: str = "nothing_else_changed", weight: float = 1.0
    ) -> Criterion:
        """Every row of `tables` (default: every table) is the reference's, in every column."""
        names = (
            list(tables)
            if tables is not None
            else [
                r["name"]
                for r in self.reference.query(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND "
                    "name NOT LIKE 'sqlite_%' AND name != '_verifier_facts'"
                )
            ]
        )
        changed = []
        for table in names:
            sql = f'SELECT * FROM "{table}" ORDER BY rowid LIMIT {MAX_ROWS + 1}'
            got = [tuple(row) for row in self.db.execute(sql).fetchall()]
            if got != [tuple(row.values()) for row in self.reference.query(sql)]:
                changed.append(table)
        detail = f"changed: {', '.join(changed)}" if changed else f"{', '.join(names)} as expected"
        return Criterion(criterion, not changed, weight, detail)


def _stated(value: Any, numbers: list[float], text: str, tolerance: float) -> bool:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return any(math.isclose(n, value, abs_tol=tolerance, rel_tol=0.0) for n in numbers)
    return " ".join(str(value).split()).casefold() in text


def _shown(value: Any) -> str:
    return f"{value:.2f}" if isinstance(value, float) else repr(value) if isinstance(value, str) else str(value)


__all__ = [
    "ReferenceCriteria",
    "ParseError",
    "compare_rows",
    "compare_json",
    "parse_rows",
    "normalise",
    "same_value",
    "MAX_FILE_CHARS",
    "MAX_ROWS",
]
