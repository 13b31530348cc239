"""The notebooks' front door, in a real browser: JupyterLab on loopback, driven by Debian's chromium.

Starts `jupyter lab` (token, free port, the repository as its root, autosave off so the notebook file is
left as it is), opens notebooks/00_quickstart.ipynb, runs all cells from the Run menu under the `ci`
profile, and checks what a user would: every code cell ran, none ended in an error, and the verifier's
verdict table is on the page. Screenshots of the top and of the verdict go to runs/ci/browser/ (or
$PROGAGENT_BROWSER_OUT).

The browser is the system's chromium (`apt-get install -y chromium`; .ci/run installs it), driven by
Playwright through `executable_path`: Playwright's own browser download is not used.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = "notebooks/00_quickstart.ipynb"
KERNEL = "progagent"
RUN_TIMEOUT_S = 420  # all cells of the quickstart under `ci`: about half a minute on an idle 2-core machine

pytestmark = pytest.mark.slow


def _chromium() -> str:
    for candidate in (os.environ.get("PROGAGENT_CHROMIUM"), "chromium", "chromium-browser"):
        path = candidate and shutil.which(candidate)
        if path:
            return path
    pytest.skip("Debian's chromium is not installed on this machine (apt-get install -y chromium; .ci/run does it), "
                "so the real-browser JupyterLab test cannot run here")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_settings(settings_dir: Path) -> None:
    """JupyterLab user settings for the test: never save the notebook, render every cell (no windowing)."""
    overrides = {
        "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
        "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {"fetchNews": "false", "checkForUpdates": False},
    }
    for relative, values in overrides.items():
        path = settings_dir / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))


def _wait_for_server(url: str, token: str, proc: subprocess.Popen, log: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"jupyter lab exited with {proc.returncode} before serving; its log:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"jupyter lab did not answer on {url} within {timeout:.0f} s; its log:\n{log.read_text()[-3000:]}")


@pytest.fixture
def lab(tmp_path):
    """A real JupyterLab server on 127.0.0.1 with a token, rooted at the repository; yields (url, token)."""
    from jupyter_client.kernelspec import KernelSpecManager

    if KERNEL not in KernelSpecManager().find_kernel_specs():
        pytest.fail(f"the notebooks' kernel {KERNEL!r} is not registered for {sys.prefix}: run `make install` "
                    f"(or `{sys.executable} -m ipykernel install --sys-prefix --name {KERNEL}`)")
    token, port = secrets.token_hex(16), _free_port()
    home = tmp_path / "jupyter"
    _write_settings(home / "settings")
    env = {**os.environ, "PROGAGENT_PROFILE": "ci", "JUPYTER_CONFIG_DIR": str(home / "config"),
           "JUPYTER_RUNTIME_DIR": str(home / "runtime"), "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
           "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces")}
    env.setdefault("PROGAGENT_CACHE", str(REPO / ".cache" / "progagent"))
    log = tmp_path / "jupyter-lab.log"
    with log.open("w") as log_file:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
             "--port-retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={REPO}",
             f"--MultiKernelManager.default_kernel_name={KERNEL}", "--LabApp.news_url=", "--LabApp.expose_app_in_browser=True",
             *(["--allow-root"] if os.geteuid() == 0 else [])],
            cwd=REPO, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for_server(url, token, proc, log)
        yield url, token
    finally:
        proc.send_signal(signal.SIGTERM)  # the server shuts its kernels down on the way out
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# In the page: the open notebook as JupyterLab holds it (nbformat JSON, outputs included), and its kernel.
_NOTEBOOK_JS = """() => {
  const widget = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  if (!widget || !widget.context || !widget.sessionContext) return null;
  const kernel = widget.sessionContext.session && widget.sessionContext.session.kernel;
  return {kernel: kernel ? kernel.name : null, status: widget.sessionContext.kernelDisplayStatus,
          cells: widget.context.model.toJSON().cells.filter(c => c.cell_type === 'code')};
}"""

# What the page shows of each code cell's outputs: their text and the text of any table in them.
_RENDERED_JS = """() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell.jp-CodeCell')].map(cell => ({
  text: (cell.querySelector('.jp-OutputArea') || {}).innerText || '',
  tables: [...cell.querySelectorAll('.jp-OutputArea-output table')].map(t => t.innerText),
}))"""


def _errors(cells: list[dict]) -> list[str]:
    return [f"code cell {i}: {o.get('ename')}: {o.get('evalue')}" for i, c in enumerate(cells)
            for o in c.get("outputs", []) if o.get("output_type") == "error"]


def _all_ran(cells: list[dict]) -> bool:
    """A fresh kernel numbers the cells of one Run All 1..n."""
    return bool(cells) and [c.get("execution_count") for c in cells] == list(range(1, len(cells) + 1))


@pytest.fixture
def chromium() -> str:
    """The system's chromium, checked before JupyterLab is started: without it the test is skipped and says why."""
    path = _chromium()
    pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed (it is in requirements.txt)")
    return path


def test_quickstart_runs_in_jupyterlab_in_chromium(chromium, lab, capsys):
    from playwright import sync_api as playwright

    url, token = lab
    notebook_file = REPO / NOTEBOOK
    before = hashlib.sha256(notebook_file.read_bytes()).hexdigest()
    out_dir = Path(os.environ.get("PROGAGENT_BROWSER_OUT", REPO / "runs" / "ci" / "browser"))
    out_dir.mkdir(parents=True, exist_ok=True)
    screenshot = out_dir / "00_quickstart-verdict.png"

    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True,
                                    args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{url}/lab/tree/{NOTEBOOK}?token={token}", wait_until="domcontentloaded")
            # The notebook is open with the project's kernel (from the notebook's metadata), and that kernel is idle.
            page.wait_for_selector(".jp-NotebookPanel .jp-Cell", timeout=90_000)
            page.wait_for_function(f"""() => {{ const n = ({_NOTEBOOK_JS})();
                                               return n && n.kernel === '{KERNEL}' && n.status === 'idle'; }}""",
                                   timeout=120_000)

            # Run > Run All Cells, as a user would.
            page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
            page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()

            # Done when every code cell has run and the kernel is idle again; Run All stops at an error.
            deadline = time.monotonic() + RUN_TIMEOUT_S
            notebook = page.evaluate(_NOTEBOOK_JS)
            while time.monotonic() < deadline:
                notebook = page.evaluate(_NOTEBOOK_JS)
                if _errors(notebook["cells"]) or (_all_ran(notebook["cells"]) and notebook["status"] == "idle"):
                    break
                time.sleep(1)
            cells, errors = notebook["cells"], _errors(notebook["cells"])
            page.wait_for_timeout(500)  # let the last outputs render
            rendered = page.evaluate(_RENDERED_JS)

            verdict = next((i for i, c in enumerate(rendered) if "R = " in c["text"] and "R~ = " in c["text"]), None)
            code_cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell.jp-CodeCell")
            page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").first.scroll_into_view_if_needed()
            page.screenshot(path=str(out_dir / "00_quickstart-top.png"))  # the opening cell and the profile banner
            (code_cells.nth(verdict) if verdict is not None else code_cells.last).scroll_into_view_if_needed()
            page.screenshot(path=str(screenshot))
            with capsys.disabled():  # shown in the test run's output, not only on failure
                print(f"\nbrowser screenshots: {screenshot} and {out_dir / '00_quickstart-top.png'}")
        finally:
            browser.close()

    assert not errors, f"cells ended with an error in JupyterLab (screenshot: {screenshot}):\n" + "\n".join(errors)
    assert _all_ran(cells), (f"not every code cell ran within {RUN_TIMEOUT_S} s: execution counts "
                             f"{[c.get('execution_count') for c in cells]} (screenshot: {screenshot})")
    assert verdict is not None, f"no cell shows the verdict line 'R = ..., R~ = ...' (screenshot: {screenshot})"
    tables = rendered[verdict]["tables"]
    assert tables and all(column in tables[0] for column in ("name", "passed", "weight", "detail")), \
        f"the verdict cell shows no criteria table (name, passed, weight, detail); it shows: {rendered[verdict]['text'][:500]}"
    assert "R = 1, R~ = 1.00" in rendered[verdict]["text"], f"the oracle's verdict is not R = 1: {rendered[verdict]['text'][:300]}"
    assert hashlib.sha256(notebook_file.read_bytes()).hexdigest() == before, f"{NOTEBOOK} was modified by the browser session"
