"""The three harnesses as data: which tools the model sees, which it may call directly, which prompt.

DTC, PTC and Hybrid differ only here; the episode loop is shared. Every harness also offers
`terminal` and `claim_done`. Names and parameters match the authors' released models.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROMPTS = Path(__file__).parent / "prompts"

PROGRAMMATIC_TOOL_CALL = "programmatic_tool_call"
TERMINAL = "terminal"
CLAIM_DONE = "claim_done"
META_TOOLS = (PROGRAMMATIC_TOOL_CALL, TERMINAL, CLAIM_DONE)

_PTC_OPENING = {
    "ptc": (
        "Run a Python program in the persistent session. This is the only way to use the environment's "
        "tools: call them inside the program as `tools.<name>(...)`."
    ),
    "hybrid": (
        "Run a Python program in the persistent session. Use it when a step needs many tool calls, "
        "loops or computation; single look-ups can also be made as direct tool calls."
    ),
}
_PTC_BODY = (
    "\n\nInside the program, `tools.<name>(arg=value)` (or `tools[\"name\"](...)`) calls an environment tool "
    "and returns its result as a Python object; a failed call raises `ToolError`, which you may catch. "
    "Variables, functions and imports persist between programs. The current folder is the workspace. "
    "Only printed output (and the value of a final bare expression) is returned, cut if it is very long, "
    "so print compact summaries. `help(tools)` lists the tools.\n\nAvailable tools:\n{tool_docs}"
)


@dataclass(frozen=True)
class HarnessSpec:
    """What distinguishes one harness from another."""

    name: str
    label: str                  # how tables and figures write it
    system_prompt_file: str
    direct_task_tools: bool     # the task's tools are callable as direct tool calls
    programmatic: bool          # programmatic_tool_call is offered

    def system_prompt(self, override: str | Path | None = None) -> str:
        path = Path(override) if override else PROMPTS / self.system_prompt_file
        return path.read_text().strip()


HARNESSES: dict[str, HarnessSpec] = {
    "dtc": HarnessSpec("dtc", "DTC", "system_direct.md", direct_task_tools=True, programmatic=False),
    "ptc": HarnessSpec("ptc", "PTC", "system_programmatic.md", direct_task_tools=False, programmatic=True),
    "hybrid": HarnessSpec("hybrid", "Hybrid", "system_direct.md", direct_task_tools=True, programmatic=True),
}
HARNESS_LABELS: dict[str, str] = {name: spec.label for name, spec in HARNESSES.items()}


def parse_harnesses(text: str) -> list[str]:
    """A command line's comma-separated harness names ("dtc,ptc"), checked: ValueError names the unknown ones."""
    names = [h.strip() for h in text.split(",") if h.strip()]
    unknown = [h for h in names if h not in HARNESSES]
    if unknown or not names:
        raise ValueError(f"{text!r}: " + (f"unknown harness(es) {unknown}; " if unknown else "no harness named; ")
                         + f"choose from {', '.join(HARNESSES)}")
    return names


def get_harness(name: str) -> HarnessSpec:
    try:
        return HARNESSES[name]
    except KeyError:
        raise ValueError(f"unknown harness {name!r}; expected one of {', '.join(HARNESSES)}") from None


def _function(name: str, description: str, parameters: dict, required: list[str]) -> dict:
    return {"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "properties": parameters, "required": required}}}


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
        blocks.append(f"tools.{fn['name']}({', '.join(args)})\n    {fn['description']}" + (f"\n    Args:{arg_docs}" if arg_docs else ""))
    return "\n\n".join(blocks)


def meta_tool_schemas(harness: HarnessSpec, task_tool_schemas: list[dict]) -> list[dict]:
    """programmatic_tool_call (PTC, Hybrid), terminal and claim_done."""
    schemas = []
    if harness.programmatic:
        description = _PTC_OPENING[harness.name] + _PTC_BODY.format(tool_docs=describe_task_tools(task_tool_schemas))
        schemas.append(_function(PROGRAMMATIC_TOOL_CALL, description,
                                 {"code": {"type": "string", "description": "Python source to run in the persistent session."}}, ["code"]))
    schemas.append(_function(TERMINAL, "Run a shell command in the workspace folder and return its output (no network).",
                             {"command": {"type": "string", "description": "The shell command line."}}, ["command"]))
    schemas.append(_function(CLAIM_DONE, "Finish the task: submit your final answer to the user. Ends the episode.",
                             {"action": {"type": "string", "description": "Your final response to the user."}}, ["action"]))
    return schemas


def model_tool_schemas(harness: HarnessSpec | str, task_tool_schemas: list[dict]) -> list[dict]:
    """Every tool the model can call directly under this harness, in OpenAI function format."""
    harness = get_harness(harness) if isinstance(harness, str) else harness
    direct = list(task_tool_schemas) if harness.direct_task_tools else []
    return direct + meta_tool_schemas(harness, task_tool_schemas)
