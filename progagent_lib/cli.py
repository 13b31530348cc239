"""`progagent` command line: a table of commands, each module imported only when its command runs.

A layer defines its commands in its own module with `register(subparsers)`; each subcommand sets `func(args) -> int`.
This file knows every command's name, one-line help and module without importing the module, so `progagent --help`
stays fast (bench/cli.py) and `progagent CMD ...` imports only CMD's module.

It also holds the argument types every command shares (choices with a close-match suggestion, scales, harnesses,
policies, task ids and paths, existing files): a bad argument gives one line on stderr and exit status 2, never a
traceback. A check that needs two arguments together raises `UsageError` from the command, with the same effect.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

from .task.ids import UnknownTask, closest, resolve_tasks


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    module: str
    words: tuple[str, ...] = ()  # for a name two modules share: the first argument that picks this module


COMMANDS: tuple[Command, ...] = (
    Command("run", "run episodes of a policy and write trajectories (JSON lines)", "progagent_lib.harness.cli"),
    Command("serve", "serve one episode of a task as an MCP server", "progagent_lib.harness.serve_cli"),
    Command("view", "trajectories as a self-contained HTML page", "progagent_lib.harness.view_cli"),
    Command(
        "export", "trajectories as a parquet / HF datasets table", "progagent_lib.harness.view_cli", ("trajectories",)
    ),
    Command(
        "export",
        "tasks to Harbor's layout or the authors' per-scale layout",
        "progagent_lib.synthesis.cli",
        ("harbor", "authors"),
    ),
    Command("tasks", "inspect and certify the task pool", "progagent_lib.task.cli"),
    Command("train", "SFT, GSPO and evaluation of models on the task pool", "progagent_lib.train.cli"),
    Command("engine", "the inference engine (vLLM as a server process)", "progagent_lib.engine.cli"),
    Command(
        "launch",
        "start a GPU run: the vLLM server on its GPUs, the trainers through accelerate on theirs",
        "progagent_lib.train.launch_cli",
    ),
    Command(
        "synth", "build tasks with a constructor model (OpenAI-compatible endpoint)", "progagent_lib.synthesis.cli"
    ),
    Command(
        "audit", "consistency checks across scales, and an independent PTC solver at v3", "progagent_lib.synthesis.cli"
    ),
    Command(
        "filter",
        "difficulty filter: keep tasks whose pass rate is in (low, high) at every scale",
        "progagent_lib.synthesis.cli",
    ),
    Command("import", "import tasks from the authors' layout into the native format", "progagent_lib.synthesis.cli"),
    Command("reproduce", "run the numbered notebooks headless for a profile", "progagent_lib.analysis.cli"),
    Command(
        "memorization", "replay the teacher's turns of one instance on other instances", "progagent_lib.analysis.cli"
    ),
    Command(
        "openenv",
        "OpenEnv integration: serve episodes to OpenEnv clients and trainers",
        "progagent_lib.integrations.openenv_cli",
    ),
    Command(
        "bench", "external benchmarks (AgentDojo, BFCL multi-turn) under every harness", "progagent_lib.benchmarks.cli"
    ),
)
DEFAULT_SCALE = "v0"  # every command's default scale: the base size, fastest to build, the one the profiles train on


class UsageError(ValueError):
    """A bad argument found by the command itself (e.g. a task id under another argument's pool): exit status 2."""


class CommandUnavailable(RuntimeError):
    """A command whose module cannot be imported here (not written yet, or a dependency missing): exit status 1."""


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line: `progagent run: error: --policy 'orcale': unknown policy; expected ...;
    did you mean oracle?`. Subparsers inherit the class, so every command of the table gets it."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {_one_line(_reworded(message) + _choice_hint(message))}\n")


def _reworded(message: str) -> str:
    """`--harness 'x': ...` as the commands' own errors read; a subcommand's dest (`tasks_command`) left out."""
    named = re.match(r"argument ([^:]+): (.*)", message, re.S)
    if not named:
        return message
    name, rest = named.groups()
    if not name.startswith("-") and rest.startswith("invalid choice"):
        return rest
    return f"{name} {rest}" if rest.startswith("'") else f"{name}: {rest}"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _choice_hint(message: str) -> str:
    """argparse's 'invalid choice' (subcommands, `choices=`) with our close-match suggestion."""
    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if not found:
        return ""
    return did_you_mean(found[1], re.findall(r"'([^']*)'", found[2]) or found[2].split(", "))


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """'; did you mean X?' for the choices nearest to `word`, else ''."""
    near = closest(word, list(choices))
    return f"; did you mean {' or '.join(near)}?" if near else ""


# --- argument types (argparse `type=`): each returns the parsed value or raises ArgumentTypeError -----------------


def one_of(choices: Iterable[str], what: str) -> Callable[[str], str]:
    """A type accepting one of `choices`: `--harness ptcc` -> `'ptcc': unknown harness; ...; did you mean ptc?`."""
    choices = tuple(choices)

    def check(text: str) -> str:
        if text in choices:
            return text
        raise argparse.ArgumentTypeError(
            f"{text!r}: unknown {what}; choose from {', '.join(choices)}" + did_you_mean(text, choices)
        )

    return check


def parsed_by(parse: Callable[[str], Any], choices: Iterable[str]) -> Callable[[str], Any]:
    """A type from a parser of comma-separated names (`parse_scales`, `parse_harnesses`): its ValueError's message,
    with a suggestion for the first unknown name that is near a choice."""
    choices = tuple(choices)

    def check(text: str) -> Any:
        try:
            return parse(text)
        except ValueError as exc:
            unknown = [w.strip() for w in text.split(",") if w.strip() and w.strip() not in choices]
            hint = next((h for h in (did_you_mean(w, choices) for w in unknown) if h), "")
            raise argparse.ArgumentTypeError(f"{exc}{hint}") from None

    return check


def scale_list(text: str) -> list[str]:
    """`v0,v3` (or `all`) -> ['v0', 'v3']."""
    from .task.scales import SCALES, parse_scales

    return parsed_by(parse_scales, SCALES)(text)


def harness_list(text: str) -> list[str]:
    """Comma-separated harness names -> their list, each checked (`parse_harnesses`)."""
    from .harness.spec import HARNESSES, parse_harnesses

    return parsed_by(parse_harnesses, HARNESSES)(text)


def int_list(text: str) -> list[int]:
    """`0,1,2` -> [0, 1, 2]."""
    try:
        values = [int(s) for s in text.split(",") if s.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: write comma-separated integers, e.g. 0,1,2") from None
    if not values:
        raise argparse.ArgumentTypeError(f"{text!r}: no integer given; write e.g. 0 or 0,1,2")
    return values


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: write a whole number of at least 1")
    return value


def task_path(text: str) -> Path:
    """A task folder or a folder of tasks, as a path or an id/domain under the pool (`retail/restock_orders`)."""
    try:
        return resolve_tasks(text)
    except UnknownTask as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def one_task(text: str) -> Path:
    """One task folder, as a path or an id under the pool."""
    try:
        return resolve_tasks(text, single=True)
    except UnknownTask as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def task_ids_under(pool: str | Path, ids: Iterable[str], option: str = "--task") -> list[str]:
    """`ids`, each checked to name one task under `pool`; UsageError (with the closest ids) for the first that does
    not. For a command that takes the pool and the ids as two arguments."""
    for task_id in ids:
        try:
            resolve_tasks(task_id, pool=pool, single=True)
        except UnknownTask as exc:
            raise UsageError(f"{option} {exc}") from None
    return list(ids)


def existing_file(text: str) -> str:
    """A file that exists; else the nearest files of its folder (`configs/cpu-smok.yaml` -> configs/cpu-smoke.yaml)."""
    path = Path(text).expanduser()
    if path.is_file():
        return text
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is a folder, not a file")
    folder = path.parent
    if not folder.is_dir():
        raise argparse.ArgumentTypeError(f"{text!r}: no such file (and no folder {str(folder)!r})")
    siblings = sorted(p.name for p in folder.iterdir() if p.is_file())
    near = [str(folder / name) if str(folder) != "." else name for name in closest(path.name, siblings)]
    if near:
        hint = f"; did you mean {' or '.join(near)}?"
    else:
        same_kind = [name for name in siblings if path.suffix and Path(name).suffix == path.suffix][:10]
        hint = f"; {folder} holds {', '.join(same_kind)}" if same_kind else ""
    raise argparse.ArgumentTypeError(f"{text!r}: no such file{hint}")


# Policies as `policy.factory.make_policy` builds them: kind -> whether it needs `:VALUE`.
POLICY_KINDS = {"oracle": False, "memorize": False, "hf": True, "openai": True, "replay": True}


def policy_spec(text: str, extra: Iterable[str] = ()) -> str:
    """A policy spec (`oracle`, `memorize:0`, `hf:smollm2`, `openai:URL#MODEL`, `replay:FILE`), or one of `extra`."""
    extra = tuple(extra)
    if text in extra:
        return text
    kind, sep, value = text.partition(":")
    if kind not in POLICY_KINDS:
        from .policy.factory import SPEC_HELP

        words = [*POLICY_KINDS, *extra]
        raise argparse.ArgumentTypeError(
            f"{text!r}: unknown policy; expected {' | '.join([*extra, SPEC_HELP])}" + did_you_mean(kind, words)
        )
    if POLICY_KINDS[kind] and not value:
        raise argparse.ArgumentTypeError(
            f"{text!r}: write {kind}:VALUE, e.g. hf:smollm2, "
            "openai:http://127.0.0.1:8001/v1#smollm2 or replay:runs/teacher.jsonl"
        )
    if kind == "oracle" and sep:
        raise argparse.ArgumentTypeError(f"{text!r}: the oracle takes no value; write oracle")
    if kind == "memorize" and value and not value.lstrip("-").isdigit():
        raise argparse.ArgumentTypeError(f"{text!r}: write memorize or memorize:TRAIN_SEED, e.g. memorize:0")
    if kind == "openai" and "#" not in value:
        raise argparse.ArgumentTypeError(
            f"{text!r}: write openai:BASE_URL#MODEL, e.g. openai:http://127.0.0.1:8001/v1#smollm2"
        )
    if kind == "replay":
        try:
            existing_file(value)
        except argparse.ArgumentTypeError as exc:
            raise argparse.ArgumentTypeError(f"{text!r}: the trajectories file {exc}") from None
    return text


def policy_or(*extra: str) -> Callable[[str], str]:
    """`policy_spec` that also accepts the command's own policies (e.g. bench's ground-truth)."""
    return lambda text: policy_spec(text, extra)


# --- the command table -------------------------------------------------------------------------------------------


def package_version() -> str:
    """The installed package's version, else pyproject.toml's (a checkout run without installing)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("progagent-workbench")
    except PackageNotFoundError:
        import tomllib

        pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
        try:
            return tomllib.loads(pyproject.read_text())["project"]["version"]
        except (OSError, KeyError, tomllib.TOMLDecodeError):
            return "unknown"


class _Version(argparse.Action):
    """`--version`, read only when asked (the metadata lookup is not free)."""

    def __init__(self, option_strings, dest, **kwargs):
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"progagent {package_version()}")  # on stdout, as argparse's own version action does
        parser.exit(0)


def top_parser() -> Parser:
    parser = Parser(
        prog="progagent",
        description="ProgAgent workbench for programmatic tool calling.",
        epilog="`progagent COMMAND --help` shows a command's options. Task ids (retail/restock_orders) "
        "are read under $PROGAGENT_TASKS, else the repository's tasks/.",
    )
    parser.add_argument("--version", action=_Version)
    return parser


def listing_parser() -> Parser:
    """The top-level parser with every command as a placeholder: for --help, --version and a missing command."""
    parser = top_parser()
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in _listed().items():
        subparsers.add_parser(name, help=help_text)
    return parser


def _listed() -> dict[str, str]:
    """Each command name once, with its help (a name two modules share shows each one's first word and help)."""
    listed: dict[str, list[Command]] = {}
    for command in COMMANDS:
        listed.setdefault(command.name, []).append(command)
    return {
        name: commands[0].help if len(commands) == 1 else "; ".join(f"{'|'.join(c.words)}: {c.help}" for c in commands)
        for name, commands in listed.items()
    }


def command_word(argv: list[str]) -> str | None:
    """The command: the first argument that is not an option."""
    return next((a for a in argv if not a.startswith("-")), None)


def modules_for(name: str, argv: list[str]) -> list[str]:
    """The module(s) whose `register` defines `name` as `argv` uses it; UsageError for an unknown name."""
    matching = [c for c in COMMANDS if c.name == name]
    if not matching:
        raise UsageError(f"unknown command {name!r} (`progagent --help` lists them){did_you_mean(name, _listed())}")
    if len(matching) == 1:
        return [matching[0].module]
    rest = argv[argv.index(name) + 1 :]
    word = command_word(rest)
    chosen = [c.module for c in matching if word in c.words]
    if chosen:
        return chosen
    words = [w for c in matching for w in c.words]
    if word is None and any(a in ("-h", "--help") for a in rest):
        return []  # `progagent export --help`: the listing of its forms (see main)
    raise UsageError(
        f"{name} {word!r}: choose {' or '.join(words)}{did_you_mean(word or '', words)}"
        if word
        else f"{name}: choose what, {' or '.join(words)}"
    )


def command_parser(name: str, argv: list[str]) -> Parser:
    """The top-level parser with only `name`'s module registered."""
    parser = top_parser()
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module_name in modules_for(name, argv):
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:  # a command still being written: listed, and this one line when run
                raise CommandUnavailable(
                    f"{name} is not available: its module is not in this checkout ({module_name})"
                ) from None
            if exc.name and exc.name.split(".")[0] != "progagent_lib":  # an optional package; ours get a traceback
                raise CommandUnavailable(
                    f"{name} needs the package {exc.name.split('.')[0]!r}, which is not installed here"
                ) from None
            raise
        module.register(subparsers)
    return parser


def _shared_help(name: str) -> str:
    forms = [f"  progagent {name} {'|'.join(c.words)} ...   {c.help}" for c in COMMANDS if c.name == name]
    return (
        f"usage: progagent {name} {{{','.join(w for c in COMMANDS if c.name == name for w in c.words)}}} ...\n\n"
        + "\n".join(forms)
        + f"\n\n`progagent {name} WORD --help` shows the options of each.\n"
    )


def main(argv: list[str] | None = None) -> int:
    """Run one command line; returns the exit status (2 for a bad argument, after one line on stderr)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    name = command_word(argv)
    try:
        if name is None:
            args = listing_parser().parse_args(argv)  # --help, --version or no command: argparse exits
        elif not modules_for(name, argv):
            print(_shared_help(name), end="")
            return 0
        else:
            args = command_parser(name, argv).parse_args(argv)
    except SystemExit as exc:  # argparse's exits (--help: 0, a bad argument: 2) as our return value
        return 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 2
    except UsageError as exc:
        print(f"progagent: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2
    except CommandUnavailable as exc:
        print(f"progagent {name}: error: {exc}", file=sys.stderr)
        return 1
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"progagent {name}: error: {_one_line(str(exc))}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    from progagent_lib.cli import main as package_main  # one copy of the module, whose UsageError the commands raise

    sys.exit(package_main())
