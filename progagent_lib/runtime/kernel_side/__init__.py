"""Code that runs inside the sandbox (the kernel, and the launcher before it), kept as real modules.

The sandbox cannot import progagent_lib (Landlock hides the project tree), so every `Sandbox` gets
a copy of this package, under the name `ptc_kernel_side`, in its own read-only `lib/` folder
(`copy_into`); the launcher and the kernel import it from there. The host never sends code: it sends
calls (`call_code`), one line each, to functions of these modules. They depend on the standard
library and on what any IPython kernel has, nothing else, and must stay that way; the tests also
import them on the host, where they run against a real bridge.

- `launcher.py`: the first code of a sandboxed process (namespaces, limits, capabilities, Landlock), then exec;
- `seccomp.py`: the seccomp filters (the launcher's, and the kernel's own once its sockets exist);
- `startup.py`: what a (re)started kernel runs first: the kernel's seccomp filter, `tools`, its folder;
- `tools_proxy.py`: the kernel's `tools` object; `output_guard.py`: the bound on what prints send;
- `reaper.py`: reaps the kernel's children the host killed.
"""

from pathlib import Path

PACKAGE = "ptc_kernel_side"  # the name this package is imported under inside the sandbox
FRAMES = f"/{PACKAGE}/"  # in a traceback, marks the frames of this package (hidden from the model)


def copy_into(lib: Path) -> Path:
    """Copy this package into `lib/ptc_kernel_side/` (the folder the sandbox may read); return it."""
    import shutil

    target = lib / PACKAGE
    shutil.copytree(Path(__file__).parent, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return target


def import_path_code(lib: Path) -> str:
    """Cell that makes the sandbox's copy of this package importable in the kernel (`python -I` has no PYTHONPATH)."""
    return f"import sys as _ptc_sys\n_ptc_sys.path.insert(0, {str(lib)!r})\ndel _ptc_sys\n"


def call_code(module: str, function: str, *args: int | str | bool | None, result: str | None = None) -> str:
    """Cell that calls `ptc_kernel_side.<module>.<function>(*args)` in the kernel (and binds `result = ` its value).

    Arguments are plain constants written with repr(); nothing else of the call is text from the host.
    """
    if not all(arg is None or isinstance(arg, (int, str, bool)) for arg in args):
        raise TypeError("kernel-side calls take ints, strings, booleans and None only")
    call = f"_ptc_call({', '.join(repr(arg) for arg in args)})"
    return (
        f"from {PACKAGE}.{module} import {function} as _ptc_call\n"
        f"{f'{result} = ' if result else ''}{call}\ndel _ptc_call\n"
    )
