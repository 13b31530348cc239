"""docs/cli.md is what the commands print: scripts/gen_cli_docs.py regenerates it, and its --check fails on a stale page."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "gen_cli_docs.py"


def gen_cli_docs(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *argv], cwd=REPO, capture_output=True, text=True, timeout=300)


def test_docs_cli_md_is_current():
    done = gen_cli_docs("--check")
    assert done.returncode == 0, done.stderr


def test_the_page_holds_every_command_and_a_stale_page_fails_the_check(tmp_path):
    page = tmp_path / "cli.md"
    assert gen_cli_docs("--out", str(page)).returncode == 0
    text = page.read_text()
    for heading in ("## `progagent`", "## `progagent run`", "## `progagent tasks list`", "## `progagent train sft`",
                    "## `progagent serve`", "## `progagent bench run`"):
        assert heading in text
    assert "--unsafe-no-sandbox" in text and "--version" in text
    page.write_text(text.replace("--unsafe-no-sandbox", "--unsafe", 1))   # a flag renamed since the page was written
    stale = gen_cli_docs("--check", "--out", str(page))
    assert stale.returncode == 1 and "scripts/gen_cli_docs.py" in stale.stderr
