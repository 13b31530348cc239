"""The harnesses as data: one `HarnessSpec` row per harness, and the only module that names one.

DTC, PTC and Hybrid differ only in their row (which tools the model sees and may call directly, the prompt,
the programmatic tool's opening sentence, how much of a program's output the model reads, how the oracle
teacher opens an episode, the label and colour of figures); the episode loop is shared. Every harness also
offers `terminal` and `claim_done`. Tool names and parameters match the authors' released models.

Another harness is another row: `register_harness(spec)` adds it everywhere (commands, configs, the teacher,
SFT, evaluation, tables and figures), `unregister_harness(name)` takes it away again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from ..runtime.ptc import DEFAULT_MAX_OUTPUT_CHARS

PROMPTS = Path(__file__).parent / "prompts"

PROGRAMMATIC_TOOL_CALL = "programmatic_tool_call"
TERMINAL = "terminal"
CLAIM_DONE = "claim_done"
META_TOOLS = (PROGRAMMATIC_TOOL_CALL, TERMINAL, CLAIM_DONE)

# How the oracle teacher (policy.oracle) opens an episode, and so plays it:
DIRECT_CALLS = "direct_calls"  # each oracle tool call is one direct call
INSPECTION_PROGRAM = "inspection_program"  # a program that looks at the data, then the oracle as programs
DIRECT_LOOKUPS = "direct_lookups"  # single look-ups as direct calls, then the loops as one program
TEACHER_OPENINGS = (DIRECT_CALLS, INSPECTION_PROGRAM, DIRECT_LOOKUPS)
_OPENING_NEEDS = {DIRECT_CALLS: (True, False), INSPECTION_PROGRAM: (False, True), DIRECT_LOOKUPS: (True, True)}

_PROGRAM_TOOL_BODY = (
    '\n\nInside the program, `tools.<name>(arg=value)` (or `tools["name"](...)`) calls an environment tool '
    "and returns its result as a Python object; a failed call raises `ToolError`, which you may catch. "
    "Variables, functions and imports persist between programs. The current folder is the workspace. "
    "Only printed output (and the value of a final bare expression) is returned{cut}, "
    "so print compact summaries. `help(tools)` lists the tools.\n\nAvailable tools:\n{tool_docs}"
)


class HarnessSpecError(ValueError):
    """A harness row that cannot work (its tools, its teacher opening or its bound do not fit together)."""


@dataclass(frozen=True)
class HarnessSpec:
    """What distinguishes one harness from another."""

    name: str
    label: str  # how tables and figures write it
    color: str  # its colour in every figure (CSS colour)
    shape: str  # its point shape in figures (a Vega-Lite shape: circle, square, ...)
    system_prompt_file: str  # under harness/prompts/ (system_prompt_text, when set, replaces it)
    direct_task_tools: bool  # the task's tools are callable as direct tool calls
    programmatic: bool  # programmatic_tool_call is offered
    teacher_opening: str  # how the oracle teacher plays it: one of TEACHER_OPENINGS
    program_tool_opening: str = ""  # first sentence of programmatic_tool_call's description (programmatic only)
    output_bound: int | None = DEFAULT_MAX_OUTPUT_CHARS  # characters of a program's output the model reads; None: all
    system_prompt_text: str | None = None

    def __post_init__(self) -> None:
        if not self.name or not isinstance(self.name, str):
            raise HarnessSpecError(f"a harness needs a name, got {self.name!r}")
        if self.teacher_opening not in TEACHER_OPENINGS:
            raise HarnessSpecError(
                f"harness {self.name!r}: teacher_opening {self.teacher_opening!r} is not one of "
                f"{', '.join(TEACHER_OPENINGS)}"
            )
        if _OPENING_NEEDS[self.teacher_opening] != (self.direct_task_tools, self.programmatic):
            direct, programmatic = _OPENING_NEEDS[self.teacher_opening]
            raise HarnessSpecError(
                f"harness {self.name!r}: the teacher opening {self.teacher_opening!r} needs "
                f"direct_task_tools={direct} and programmatic={programmatic}"
            )
        if self.programmatic and not self.program_tool_opening:
            raise HarnessSpecError(
                f"harness {self.name!r} offers {PROGRAMMATIC_TOOL_CALL}: give its "
                "program_tool_opening (the first sentence of the tool's description)"
            )
        bound = self.output_bound
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 1):
            raise HarnessSpecError(
                f"harness {self.name!r}: output_bound must be characters >= 1 or None (no cut), got {bound!r}"
            )

    def system_prompt(self, override: str | Path | None = None) -> str:
        if override:
            return Path(override).read_text().strip()
        if self.system_prompt_text is not None:
            return self.system_prompt_text.strip()
        return (PROMPTS / self.system_prompt_file).read_text().strip()

    @property
    def prompt_kind(self) -> str:
        """Which family of system prompts fits: 'direct' where task tools are direct calls, else 'programmatic'
        (a benchmark's prompt files are `<suite>_<kind>.md`)."""
        return "direct" if self.direct_task_tools else "programmatic"


DTC = HarnessSpec(
    name="dtc",
    label="DTC",
    color="#d95f02",
    shape="circle",
    system_prompt_file="system_direct.md",
    direct_task_tools=True,
    programmatic=False,
    teacher_opening=DIRECT_CALLS,
)
PTC = HarnessSpec(
    name="ptc",
    label="PTC",
    color="#1b9e77",
    shape="square",
    system_prompt_file="system_programmatic.md",
    direct_task_tools=False,
    programmatic=True,
    teacher_opening=INSPECTION_PROGRAM,
    program_tool_opening="Run a Python program in the persistent session. This is the only way to use the "
    "environment's tools: call them inside the program as `tools.<name>(...)`.",
)
HYBRID = HarnessSpec(
    name="hybrid",
    label="Hybrid",
    color="#7570b3",
    shape="triangle-up",
    system_prompt_file="system_direct.md",
    direct_task_tools=True,
    programmatic=True,
    teacher_opening=DIRECT_LOOKUPS,
    program_tool_opening="Run a Python program in the persistent session. Use it when a step needs many tool "
    "calls, loops or computation; single look-ups can also be made as direct tool calls.",
)

HARNESSES: dict[str, HarnessSpec] = {spec.name: spec for spec in (DTC, PTC, HYBRID)}
PAPER_HARNESSES = (DTC.name, PTC.name, HYBRID.name)  # the three the paper compares: the configs' default
DEFAULT_HARNESS = PTC.name  # what a command plays when no harness is named
BASELINE_HARNESS = DTC.name  # what the others' costs are compared with (DTC/PTC ratios); starts no kernel


class _Labels(Mapping[str, str]):
    """Each registered harness's label, read at lookup (a harness registered later is in it)."""

    def __getitem__(self, name: str) -> str:
        return HARNESSES[name].label

    def __iter__(self) -> Iterator[str]:
        return iter(HARNESSES)

    def __len__(self) -> int:
        return len(HARNESSES)


HARNESS_LABELS: Mapping[str, str] = _Labels()


def register_harness(spec: HarnessSpec) -> HarnessSpec:
    """Add a harness row: from now on every command, config, policy, table and figure knows it by `spec.name`."""
    if not isinstance(spec, HarnessSpec):
        raise HarnessSpecError(f"register_harness takes a HarnessSpec, got {type(spec).__name__}")
    if spec.name in HARNESSES:
        raise HarnessSpecError(
            f"a harness named {spec.name!r} is already registered; pick another name, or unregister_harness it first"
        )
    if "," in spec.name:
        raise HarnessSpecError(
            f"{spec.name!r}: a harness name cannot hold a comma (it separates harnesses on a command line)"
        )
    HARNESSES[spec.name] = spec
    return spec


def unregister_harness(name: str) -> None:
    """Take a harness added by `register_harness` away again (the paper's three stay)."""
    if name in PAPER_HARNESSES:
        raise HarnessSpecError(f"{name!r} is built in and cannot be unregistered")
    if HARNESSES.pop(name, None) is None:
        raise HarnessSpecError(f"no registered harness is named {name!r}; registered: {', '.join(HARNESSES)}")


def parse_harnesses(text: str) -> list[str]:
    """A command line's comma-separated harness names ("dtc,ptc"), checked: ValueError names the unknown ones."""
    names = [h.strip() for h in text.split(",") if h.strip()]
    unknown = [h for h in names if h not in HARNESSES]
    if unknown or not names:
        raise ValueError(
            f"{text!r}: "
            + (f"unknown harness(es) {unknown}; " if unknown else "no harness named; ")
            + f"choose from {', '.join(HARNESSES)}"
        )
    return names


def get_harness(name: str) -> HarnessSpec:
    try:
        return HARNESSES[name]
    except KeyError:
        raise ValueError(f"unknown harness {name!r}; expected one of {', '.join(HARNESSES)}") from None


def _function(name: str, description: str, parameters: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": parameters, "required": required},
        },
    }


def describe_task_tools(tool_schemas: list[dict]) -> str:
    """Python-style signatures with docstrings, as shown inside programmatic_tool_call's description."""
    blocks = []
    for schema in tool_schemas:
        fn = schema["function"]
        props = fn["parameters"].get("properties", {})
        required = set(fn["parameters"].get("required", []))
        args = []
        for pname, p in props.items():
            ptype = p.get("type", "any")
            ptype = "|".join(ptype) if isinstance(ptype, list) else ptype
            args.append(f"{pname}: {ptype}" + ("" if pname in required else f" = {p.get('default')!r}"))
        arg_docs = "".join(f"\n        {pname}: {p.get('description', '')}" for pname, p in props.items())
        blocks.append(
            f"tools.{fn['name']}({', '.join(args)})\n    {fn['description']}"
            + (f"\n    Args:{arg_docs}" if arg_docs else "")
        )
    return "\n\n".join(blocks)


def meta_tool_schemas(harness: HarnessSpec, task_tool_schemas: list[dict]) -> list[dict]:
    """programmatic_tool_call (PTC, Hybrid), terminal and claim_done."""
    schemas = []
    if harness.programmatic:
        cut = ", cut if it is very long" if harness.output_bound is not None else ""
        body = _PROGRAM_TOOL_BODY.format(cut=cut, tool_docs=describe_task_tools(task_tool_schemas))
        description = harness.program_tool_opening + body
        schemas.append(
            _function(
                PROGRAMMATIC_TOOL_CALL,
                description,
                {"code": {"type": "string", "description": "Python source to run in the persistent session."}},
                ["code"],
            )
        )
    schemas.append(
        _function(
            TERMINAL,
            "Run a shell command in the workspace folder and return its output (no network).",
            {"command": {"type": "string", "description": "The shell command line."}},
            ["command"],
        )
    )
    schemas.append(
        _function(
            CLAIM_DONE,
            "Finish the task: submit your final answer to the user. Ends the episode.",
            {"action": {"type": "string", "description": "Your final response to the user."}},
            ["action"],
        )
    )
    return schemas


def model_tool_schemas(harness: HarnessSpec | str, task_tool_schemas: list[dict]) -> list[dict]:
    """Every tool the model can call directly under this harness, in OpenAI function format."""
    harness = get_harness(harness) if isinstance(harness, str) else harness
    direct = list(task_tool_schemas) if harness.direct_task_tools else []
    return direct + meta_tool_schemas(harness, task_tool_schemas)
