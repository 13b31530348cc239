"""`progagent view FILE.jsonl [--serve]`: the trajectories of real episodes as one self-contained page, checked as
HTML and in a real browser.

The trajectories come from `progagent run`: the oracle on restock_orders under DTC and PTC, and a scripted episode
(`--policy replay:FILE`) whose program prints `<script>` and `</script>` and whose final answer holds a script, so
the kernel's own output carries the attack. The browser is Debian's chromium (`apt-get install -y chromium`), driven
by Playwright through `executable_path` as in test_browser_lab.py, opening the page from a file:// URL in a context
with the network off; it checks that an episode renders, that a filter hides the others, that the hostile text shows
as text and did not run, and that the page asked for nothing but itself. Its screenshot (an episode open) goes to
runs/ci/browser/viewer.png (or $PROGAGENT_BROWSER_OUT); docs/images/viewer.png is a copy of it.
"""
from __future__ import annotations

import base64
import dataclasses
import hashlib
import html.parser
import os
import re
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from progagent_lib.cli import main
from progagent_lib.harness import read_jsonl, write_jsonl
from progagent_lib.harness.view import trajectories_page

REPO = Path(__file__).resolve().parents[2]
HOSTILE_OUTPUT = "<script>window.__pwned = 1</script>"
HOSTILE_TURNS = """<tool_call>
{"name": "programmatic_tool_call", "arguments": {"code": "print('<script>window.__pwned = 1</script>')\\nprint('</script><img src=x onerror=\\"window.__pwned = 2\\">')"}}
</tool_call>
---
<tool_call>
{"name": "claim_done", "arguments": {"action": "done </script><script>window.__pwned = 3</script>"}}
</tool_call>"""


@pytest.fixture(scope="module")
def runs(tmp_path_factory, restock_task) -> Path:
    """Real episodes in one JSON-lines file: the oracle under DTC and PTC, the scripted hostile episode (PTC), and the
    DTC episode again labelled as the pipeline's evaluation labels a trained stage's episodes (hf:MODEL@STAGE)."""
    folder = tmp_path_factory.mktemp("view")
    out = folder / "runs.jsonl"
    assert main(["run", "--tasks", str(restock_task.root), "--harness", "dtc,ptc", "--policy", "oracle",
                 "--out", str(out), "--no-progress"]) == 0
    turns = folder / "hostile_turns.txt"
    turns.write_text(HOSTILE_TURNS)
    assert main(["run", "--tasks", str(restock_task.root), "--harness", "ptc", "--policy", f"replay:{turns}",
                 "--out", str(out), "--no-progress"]) == 0
    trajectories = read_jsonl(out)
    assert [(t.harness, t.reward) for t in trajectories] == [("dtc", 1.0), ("ptc", 1.0), ("ptc", 0.0)]
    assert HOSTILE_OUTPUT in trajectories[2].calls[0].observation   # the kernel printed it: the attack is real
    write_jsonl(dataclasses.replace(trajectories[0], policy="hf:smollm2@sft-dtc"), out)
    return out


@pytest.fixture(scope="module")
def page_file(runs) -> Path:
    out = runs.with_name("viewer.html")
    assert main(["view", str(runs), "-o", str(out)]) == 0
    return out


class Tags(html.parser.HTMLParser):
    """Every start tag with its attributes, and the text of the page."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)


def assert_only_our_markup(page: str) -> Tags:
    """One script (ours), no event-handler attribute, nothing that loads: what the file held stayed text."""
    tags = Tags(page)
    assert [t for t, _ in tags.tags].count("script") == 1
    assert not [(t, a) for t, attrs in tags.tags for a in attrs if a.startswith("on")]
    assert not [(t, a) for t, attrs in tags.tags for a in attrs if a in ("src", "href", "srcdoc", "action")]
    assert not [t for t, _ in tags.tags if t in ("img", "iframe", "link", "object", "embed", "base", "form")]
    return tags


# --- the page as HTML -------------------------------------------------------------------------------------------

def test_page_lists_every_episode_with_its_filters(page_file, runs):
    page = page_file.read_text()
    tags = Tags(page)
    rows = [attrs for tag, attrs in tags.tags if tag == "tr" and attrs.get("class") == "ep"]
    assert [(r["data-harness"], r["data-verdict"], r["data-stage"]) for r in rows] == \
        [("dtc", "pass", "—"), ("ptc", "pass", "—"), ("ptc", "fail", "—"), ("dtc", "pass", "sft-dtc")]
    assert {r["data-task"] for r in rows} == {"retail/restock_orders"}
    selects = [attrs["data-key"] for tag, attrs in tags.tags if tag == "select"]
    assert selects == ["task", "harness", "stage", "verdict"]
    options = [attrs["value"] for tag, attrs in tags.tags if tag == "option"]
    assert options.count("") == 4 and {"sft-dtc", "—", "pass", "fail", "dtc", "ptc"} <= set(options)
    # The turn views are the notebooks' renderer's (trajectory_html), one per episode.
    assert page.count("class='pa-traj'") == 4 and "Turn 1: programmatic_tool_call" in page


def test_hostile_text_stays_text(page_file):
    page = page_file.read_text()
    tags = assert_only_our_markup(page)
    text = "".join(tags.text)
    assert HOSTILE_OUTPUT in text and "window.__pwned = 3</script>" in text   # shown, as text
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in page


def test_hostile_fields_everywhere_stay_text(runs):
    """A file is hostile as a whole: the task id, harness, policy (hence stage) and numbers too."""
    t = read_jsonl(runs)[1]
    evil = dataclasses.replace(t, task_id="<img src=x onerror=alert(1)>", harness="'><script>alert(2)</script>",
                               policy="hf:m@<b onclick=alert(3)>", scale='"><iframe srcdoc=x>', turns="<svg onload=alert(4)>")
    page = trajectories_page([evil, t])
    text = "".join(assert_only_our_markup(page).text)
    assert "<img src=x onerror=alert(1)>" in text and "<b onclick=alert(3)>" in text


def test_the_page_may_run_only_its_script_and_fetch_nothing(page_file):
    page = page_file.read_text()
    policy = re.search(r"http-equiv='Content-Security-Policy' content=\"([^\"]+)\"", page)[1]
    (script,) = re.findall(r"<script>(.*?)</script>", page, re.S)
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}';" in policy and "default-src 'none'" in policy


def test_long_texts_are_cut_and_the_page_is_bounded(runs):
    t = read_jsonl(runs)[1]
    huge = dataclasses.replace(t, calls=[dataclasses.replace(t.calls[0], observation="x" * 200_000), *t.calls[1:]])
    page = trajectories_page([huge], max_observation_chars=1000)
    assert f"… ({200_000 - 1000} more characters)" in page and len(page) < 100_000
    # Past the byte budget, episodes stay listed but their turns are left out, and the page says so.
    many = trajectories_page([t] * 6, max_bytes=1)
    assert many.count("class='ep'") == 6 and many.count("class='pa-traj'") == 1
    assert many.count("The turns of this episode are not in the page") == 5 and "budget of 1 B" in many
    # Past the episode bound, the rest is not listed, and the page says how many there were.
    capped = trajectories_page([t] * 5, max_episodes=2)
    assert capped.count("class='ep'") == 2 and "the file holds 5 episodes; the first 2 are listed" in capped


def test_view_writes_beside_the_file_and_refuses_bad_arguments(runs, tmp_path, capsys):
    copy = tmp_path / "copy.jsonl"
    shutil.copy(runs, copy)
    with copy.open("a") as killed:   # a run killed mid-line
        killed.write(runs.read_text().splitlines()[0][:500])
    assert main(["view", str(copy)]) == 0
    captured = capsys.readouterr()
    assert "file://" in captured.out and "skipped 1 line(s)" in captured.err
    page = (tmp_path / "copy.html").read_text()
    assert page.count("class='ep'") == 4 and "1 line(s) of the file were not whole trajectories" in page
    assert main(["view", str(tmp_path / "nope.jsonl")]) == 2
    err = capsys.readouterr().err
    assert "no such file" in err and len(err.strip().splitlines()) == 1
    assert main(["view", str(copy), "--max-observation-chars", "0"]) == 2


def test_serve_answers_only_its_url_on_loopback(runs):
    proc = subprocess.Popen([sys.executable, "-m", "progagent_lib.cli", "view", str(runs), "--serve"], cwd=REPO,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()
        url = re.search(r"serving the page at (http://127\.0\.0\.1:\d+/\S+)", line)
        assert url, f"no URL printed: {line!r} {proc.stderr.read() if proc.poll() is not None else ''}"
        url = url[1]
        with urllib.request.urlopen(url, timeout=10) as response:
            page = response.read().decode()
            assert response.status == 200 and "Content-Security-Policy" in page and "retail/restock_orders" in page
        base = url.rsplit("/", 1)[0]
        for target, headers, status in [(base + "/", {}, 404), (base + "/wrong-token", {}, 404),
                                        (url, {"Host": "evil.example"}, 421),
                                        (url, {"Origin": "http://evil.example"}, 403)]:
            with pytest.raises(urllib.error.HTTPError) as refused:
                urllib.request.urlopen(urllib.request.Request(target, headers=headers), timeout=10)
            assert refused.value.code == status, (target, headers)
        proc.send_signal(signal.SIGINT)   # Ctrl-C
        assert proc.wait(timeout=20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


# --- the page in a real browser ---------------------------------------------------------------------------------

def _chromium() -> str:
    for candidate in (os.environ.get("PROGAGENT_CHROMIUM"), "chromium", "chromium-browser"):
        path = candidate and shutil.which(candidate)
        if path:
            return path
    pytest.skip("Debian's chromium is not installed on this machine (apt-get install -y chromium; .ci/run does it), "
                "so the real-browser viewer test cannot run here")


@pytest.mark.slow
def test_viewer_in_chromium_offline(page_file, capsys):
    chromium = _chromium()
    playwright = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed "
                                                                   "(it is in requirements.txt)")
    out_dir = Path(os.environ.get("PROGAGENT_BROWSER_OUT", REPO / "runs" / "ci" / "browser"))
    out_dir.mkdir(parents=True, exist_ok=True)
    url = page_file.resolve().as_uri()
    requests, problems = [], []

    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True,
                                    args=["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu"])
        try:
            context = browser.new_context(offline=True, viewport={"width": 1440, "height": 900})
            page = context.new_page()
            page.on("request", lambda request: requests.append(request.url))
            page.on("console", lambda message: problems.append(message.text) if message.type == "error" else None)
            page.on("pageerror", lambda error: problems.append(str(error)))
            page.goto(url, wait_until="load")
            rows = page.locator("tr.ep")
            assert page.locator("#shown-count").inner_text() == "4 of 4 episodes shown"

            # An episode renders: its task id in the turn view, and a tool call's text once the turns are open.
            rows.nth(1).click()
            view = page.locator("div.episode:not([hidden])")
            assert view.count() == 1 and "retail/restock_orders" in view.inner_text()
            assert "tools.list_files(page=page)" not in view.inner_text()   # folded
            page.click("#expand-all")
            assert "tools.list_files(page=page)" in view.inner_text() and "programmatic_tool_call" in view.inner_text()
            page.screenshot(path=str(out_dir / "viewer.png"))

            # A filter hides the episodes that do not match.
            page.select_option("#filter-harness", "dtc")
            assert [rows.nth(i).is_visible() for i in range(4)] == [True, False, False, True]
            assert page.locator("#shown-count").inner_text() == "2 of 4 episodes shown"
            page.select_option("#filter-stage", "sft-dtc")
            assert [rows.nth(i).is_visible() for i in range(4)] == [False, False, False, True]
            page.select_option("#filter-stage", "—")   # no stage
            assert [rows.nth(i).is_visible() for i in range(4)] == [True, False, False, False]
            page.select_option("#filter-stage", "")
            page.select_option("#filter-harness", "")
            page.select_option("#filter-verdict", "fail")
            assert [rows.nth(i).is_visible() for i in range(4)] == [False, False, True, False]

            # The hostile episode: its script shows as text and did not run.
            rows.nth(2).click()
            page.click("#expand-all")
            shown = page.locator("div.episode:not([hidden])").inner_text()
            assert HOSTILE_OUTPUT in shown and "window.__pwned = 3</script>" in shown
            assert page.evaluate("() => window.__pwned") is None
            assert page.evaluate("() => document.querySelectorAll('script, img, iframe').length") == 1
        finally:
            browser.close()

    assert not problems, f"the page logged errors (a blocked script would show here): {problems}"
    assert set(requests) == {url}, f"the page asked for more than itself: {sorted(set(requests) - {url})}"
    with capsys.disabled():
        print(f"\nviewer screenshot: {out_dir / 'viewer.png'}")
