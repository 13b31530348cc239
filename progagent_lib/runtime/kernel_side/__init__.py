"""Code that runs inside the sandboxed kernel, kept as real modules and sent to it as source text.

The kernel cannot import progagent_lib (the sandbox hides the project tree), so the host reads
these files and runs them in the kernel (`source(name)`). They depend on the standard library and
on what any IPython kernel has, nothing else, and must stay that way; the tests also import them on
the host, where they run against a real bridge.
"""
from pathlib import Path

FILENAME = "<ptc-tools>"  # the name their code runs under in the kernel: tracebacks hide its frames


def source(module: str) -> str:
    """The text of `kernel_side/<module>.py`."""
    return (Path(__file__).parent / f"{module}.py").read_text()
