"""The teacher reads before it writes: programs that print what its solution's literals come from.

A program teaches transfer only if its rule strings, thresholds, keys and ids came from something the student saw
(policy.grounding). After its first look at the data, the PTC and Hybrid teachers print, selectively, the documents
and records their solution reads those literals from, then write the solution.

Which ones: the teacher plays its own solution once on a private copy of the instance (it is the teacher; the
student never sees this) and records every read it makes. For each literal the episode has not shown yet, a read
whose printed result shows it is chosen, fewest reads first and documents before records, among the reads whose own
arguments were already shown (a path from the file listing, an id from a printed row), so every literal of the
reading programs is grounded too. It plans in rounds: a read whose argument a chosen read prints (the city an
invitation names) is usable in the next round, in a later program. The reads are packed into programs whose printed
output stays under a bound; what no read can show stays ungrounded and is counted by the grounded-literal rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .grounding import Literal, is_grounded, program_literals

READ_PREFIXES = ("list_", "get_", "read_", "search_", "find_", "lookup_", "show_", "view_", "check_")
OUTPUT_PER_PROGRAM = 3500  # characters one reading program prints, at most (the training configs cut at 4,000)


@dataclass(frozen=True)
class Read:
    """One recorded read of the solution: the call, and what printing it shows."""

    code: str  # the statement that prints it
    shown: str  # the text that statement prints
    order: int  # when the solution made it (earlier reads first among equals)
    name: str = ""  # the tool and its arguments, for a direct call (Hybrid) of a whole result
    arguments: dict | None = None

    @property
    def document(self) -> bool:
        return self.code.startswith("print(tools.read_file(")


def is_read(name: str) -> bool:
    return name.startswith(READ_PREFIXES)


def record_reads(task: Any, params: dict, scale: str, seed: int) -> list[tuple[str, dict, Any]]:
    """(tool, arguments, result) of every read the task's oracle makes on a private copy of the instance."""
    env = task.instantiate(scale, seed)
    recorded: list[tuple[str, dict, Any]] = []
    call_tool = env.call_tool

    def recording(name: str, arguments: dict) -> Any:
        result = call_tool(name, arguments)
        if is_read(name):
            recorded.append((name, dict(arguments), result))
        return result

    env.call_tool = recording  # this private copy only
    try:
        task.oracle(env.tools, params)
    finally:
        env.close()
    return recorded


def _call(name: str, arguments: dict) -> str:
    return f"tools.{name}(" + ", ".join(f"{k}={v!r}" for k, v in arguments.items()) + ")"


def candidate_reads(recorded: Sequence[tuple[str, dict, Any]]) -> list[Read]:
    """The ways to print each recorded read: a document whole; a record whole; a page's first item (its keys) and
    the whole page (its values)."""
    reads: list[Read] = []
    seen_codes: set[str] = set()
    for order, (name, arguments, result) in enumerate(recorded):
        call = _call(name, arguments)
        whole: dict[str, Any] = {"name": name, "arguments": arguments}
        if isinstance(result, str):
            options = [(f"print({call})", result, whole)]
        elif isinstance(result, dict) and isinstance(result.get("items"), list):
            items = result["items"]
            no_call: dict[str, Any] = {}  # an item of a page: no direct call returns it alone
            options = [(f"print({call}['items'][0])", repr(items[0]), no_call)] if items else []
            options.append((f"print({call}['items'])", repr(items), whole))
        else:
            options = [(f"print({call})", repr(result), whole)]
        for code, shown, direct in options:
            if code not in seen_codes:
                seen_codes.add(code)
                reads.append(Read(code, shown, order, **direct))
    return reads


def _cover(needed: Sequence[Literal], usable: Sequence[Read]) -> list[Read]:
    """Greedy cover: the reads showing the most of `needed` per printed character, documents first."""
    left = list(needed)
    chosen: list[Read] = []
    while left:
        best, best_shown = None, []
        for read in usable:
            if read in chosen:
                continue
            shown = [lit for lit in left if is_grounded(lit, read.shown)]
            if not shown:
                continue
            key = (len(shown) / (200 + len(read.shown)), read.document, -read.order)
            if best is None or key > best[0]:
                best, best_shown = (key, read), shown
        if best is None:
            break
        chosen.append(best[1])
        left = [lit for lit in left if lit not in best_shown]
    return chosen


def choose_reads(needed: Sequence[Literal], reads: Sequence[Read], seen: str, rounds: int = 3) -> list[list[Read]]:
    """A small set of reads that shows the needed literals (greedy cover: most literals per printed character,
    documents first), in rounds. A read is usable once its own literals are shown, by `seen` or by a read of an
    earlier round: a read that would show a needed literal but is not usable yet (a document on the listing's second
    page, the hotels of a city an invitation names) is unblocked by reads in this round that show what it lacks, and
    comes in the next. At most `rounds` rounds."""
    left = [lit for lit in needed if not is_grounded(lit, seen)]
    planned: list[list[Read]] = []
    taken: set[str] = set()  # the codes of the reads already planned
    while left and len(planned) < rounds:
        usable: list[Read] = []
        blocked: list[Read] = []
        for r in reads:
            if r.code not in taken:
                (usable if all(is_grounded(lit, seen) for lit in program_literals(r.code)) else blocked).append(r)
        chosen = _cover(left, usable)
        rest = [lit for lit in left if not any(is_grounded(lit, r.shown) for r in chosen)]
        lacking: list[Literal] = []  # what the blocked reads that would show the rest need shown first
        for read in blocked:
            if any(is_grounded(lit, read.shown) for lit in rest):
                lacking += [
                    lit for lit in program_literals(read.code) if not is_grounded(lit, seen) and lit not in lacking
                ]
        chosen += [r for r in _cover(lacking, usable) if r not in chosen]
        if not chosen:
            break
        planned.append(sorted(chosen, key=lambda r: (not r.document, r.order)))
        taken.update(r.code for r in chosen)
        seen = "\n".join([seen, *(r.shown for r in chosen)])
        left = [lit for lit in left if not is_grounded(lit, seen)]
    return planned


def reading_programs(planned: Sequence[Sequence[Read]], per_program: int = OUTPUT_PER_PROGRAM) -> list[str]:
    """Each round's reads packed into programs whose printed output stays under `per_program` characters (a round
    starts a new program: its reads use what the earlier rounds printed)."""
    programs: list[list[Read]] = []
    for chosen in planned:
        size = per_program + 1  # a new program for each round
        for read in chosen:
            if programs and size + len(read.shown) <= per_program:
                programs[-1].append(read)
                size += len(read.shown)
            else:
                programs.append([read])
                size = len(read.shown)
    return ["\n".join(r.code for r in program) for program in programs]


def plan_reading(
    task: Any, params: dict, scale: str, seed: int, program: str, seen: str, direct: bool = False
) -> list[list[Read]]:
    """The reads, in rounds (choose_reads), that show what `program`'s literals come from, given the text `seen` so
    far (`direct`: only reads a direct tool call can make, for Hybrid's look-ups)."""
    needed = [lit for lit in program_literals(program) if not is_grounded(lit, seen)]
    if not needed:
        return []
    reads = candidate_reads(record_reads(task, params, scale, seed))
    return choose_reads(needed, [r for r in reads if r.name] if direct else reads, seen)
