"""Trajectories as HTML: one episode for notebooks (`trajectory_html`: a collapsible block per turn, code
highlighted, sizes shown), and a whole JSON-lines file as one self-contained page (`trajectories_page`, what
`progagent view` writes): the list of episodes with filters, and the turns of the selected one.

Everything a trajectory holds came from a model, a kernel or a tool, so it is hostile: every text is cleaned of
control characters and HTML-escaped before it reaches the page, long texts are cut with a visible marker, and the
page's own policy (CSP) lets run only its one script, by hash, and fetch nothing.

A notebook shows a `Trajectory` as `trajectory_html`: `show_in_notebooks` tells IPython so (the harness package calls
it when imported inside IPython), which leaves the record itself free of HTML and of this module.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import sys
from typing import Any, Callable, Iterable

from ..textsafe import clean_text
from .export import episode_overview
from .spec import PROGRAMMATIC_TOOL_CALL
from .trajectory import Trajectory

_TRAJECTORY_CSS = """
.pa-traj {font-family: system-ui, sans-serif; font-size: 13px; max-width: 1000px}
.pa-traj details {border: 1px solid #ddd; border-radius: 4px; margin: 4px 0; padding: 2px 8px}
.pa-traj summary {cursor: pointer; font-weight: 600}
.pa-traj pre {white-space: pre-wrap; background: #f7f7f7; padding: 6px; margin: 4px 0; max-height: 400px; overflow: auto}
.pa-traj .err {color: #b00020} .pa-traj .meta {color: #666; font-weight: normal}
.pa-traj .think {color: #555; font-style: italic}
.pa-traj .cut {color: #8a5a00; font-style: italic}
"""
_STYLE = f"\n<style>{_TRAJECTORY_CSS}</style>\n"


def _shown(text: str) -> str:
    """Text as HTML, with its control characters removed or shown as escapes (textsafe.clean_text) first: a
    browser obeys a bidirectional override too, and a program's code or a model's text can hold one."""
    return html.escape(clean_text(text))


def _cut(text: str, limit: int) -> str:
    """`text` up to `limit` characters, and a visible marker saying how much was left out."""
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit} more characters)"


def _code(code: str, language: str = "python") -> str:
    code = clean_text(code)  # "Trojan Source": bidirectional controls in code make it read otherwise than it runs
    try:  # pygments comes with Jupyter; without it the code is shown plain
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name

        return highlight(code, get_lexer_by_name(language), HtmlFormatter(noclasses=True, nobackground=True))
    except ImportError:
        return f"<pre>{html.escape(code)}</pre>"


def show_in_notebooks(formatter: Any = None) -> bool:
    """Have IPython show every `Trajectory` as `trajectory_html`. `formatter`: an IPython `DisplayFormatter`, by default
    the running shell's; returns False (nothing done) outside IPython."""
    if formatter is None:
        ipython = sys.modules.get("IPython")  # loaded by every Jupyter kernel; never imported here for nothing
        shell = ipython.get_ipython() if ipython is not None else None
        if shell is None:
            return False
        formatter = shell.display_formatter
    formatter.formatters["text/html"].for_type(Trajectory, trajectory_html)
    return True


def trajectory_html(trajectory: Trajectory, max_observation_chars: int = 5000, *, style: bool = True) -> str:
    """The episode as HTML: header with the verdict and metrics, then each turn with its calls. Every text longer
    than `max_observation_chars` (an observation, a program, the model's text) is cut with a marker, and every
    value is escaped, numbers too (a file read back may hold anything where a number belongs).
    `style=False` leaves the stylesheet out (a page holding many episodes carries it once)."""
    t, limit = trajectory, max_observation_chars
    head = (
        f"<b>{_shown(t.task_id)}</b> · {_value(t.scale)} · seed {_value(t.seed)} · {_value(t.harness)} · "
        f"{_value(t.policy)} — R={t.reward:.0f}, R~={t.score:.2f}, ended by {_value(t.end_reason)}<br>"
        f"<span class='meta'>{_value(t.turns)} turns · {_value(t.model_tool_calls)} model tool calls · "
        f"{_value(t.tool_calls)} task-tool calls · {_value(t.tool_output_tokens)} tool-output tokens "
        f"({_value(t.token_counter)}) · {_value(t.runtime_errors)} runtime errors · {t.seconds:.1f} s</span>"
        + (
            f"<br><span class='meta'>instance parameters: {_shown(_cut(json.dumps(t.params, ensure_ascii=False), limit))}"
            "</span>"
            if t.params
            else ""
        )
    )
    criteria = "".join(
        f"<li>{'✔' if c['passed'] else '✘'} {_value(c['name'])} "
        f"<span class='meta'>{_shown(_cut(str(c.get('detail', '')), limit))}</span></li>"
        for c in t.criteria
    )
    blocks = [f"<details><summary>Prompt</summary><pre>{_shown(_cut(_user_prompt(t), limit))}</pre></details>"]
    calls_by_turn: dict[int, list] = {}
    for call in t.calls:
        calls_by_turn.setdefault(call.turn, []).append(call)
    assistant_turns = [m for m in t.messages if m.get("role") == "assistant"]
    for index, message in enumerate(assistant_turns):
        calls = calls_by_turn.get(index, [])
        tokens = sum(c.observation_tokens for c in calls)
        names = ", ".join(str(c.name) for c in calls) or "no tool call"
        parts = []
        if message.get("reasoning_content"):
            parts.append(f"<div class='think'>{_shown(_cut(str(message['reasoning_content']), limit))}</div>")
        if message.get("content"):
            parts.append(f"<pre>{_shown(_cut(str(message['content']), limit))}</pre>")
        parts += [_call_html(call, limit) for call in calls]
        blocks.append(
            f"<details><summary>Turn {index + 1}: {_shown(_cut(names, limit))} "
            f"<span class='meta'>({_value(tokens)} observation tokens)</span></summary>{''.join(parts)}</details>"
        )
    return (
        f"{_STYLE if style else ''}<div class='pa-traj'><p>{head}</p>{''.join(blocks)}"
        f"<p>Final answer: <code>{_shown(_cut(t.final_answer or '', limit))}</code></p><ul>{criteria}</ul></div>"
    )


def _call_html(call, limit: int) -> str:
    """One tool call: its name, the program (highlighted) or the arguments, and its observation, folded."""
    flag = " class='err'" if call.is_error else ""
    if call.name == PROGRAMMATIC_TOOL_CALL:
        shown = _code(_cut(str(call.arguments.get("code", "")), limit))
        p = call.program
        note = (
            (
                f" · {_value(p.loops)} loops, {_value(p.conditionals)} ifs, {_value(p.try_blocks)} try, "
                f"{_value(call.task_tool_calls)} tool calls{' · DTC-like' if p.dtc_like else ''}"
            )
            if p
            else ""
        )
    else:
        shown = f"<pre>{_shown(_cut(json.dumps(call.arguments, ensure_ascii=False, indent=1), limit))}</pre>"
        note = ""
    return (
        f"<div><b{flag}>{_value(call.name)}</b><span class='meta'>{note}</span>{shown}"
        f"<details><summary{flag}>observation <span class='meta'>{_value(call.observation_tokens)} tokens · "
        f"{len(call.observation)} chars · {call.seconds:.2f} s</span></summary>"
        f"<pre{flag}>{_shown(_cut(call.observation, limit))}</pre></details></div>"
    )


def _value(value) -> str:
    """A short field (a name, a count) as HTML; a hostile file can put text, and much of it, where a number belongs."""
    return _shown(_cut(str(value), 200))


def _user_prompt(t: Trajectory) -> str:
    return next((m["content"] for m in t.messages if m.get("role") == "user"), "")


# --- the page `progagent view` writes ---------------------------------------------------------------------------

PAGE_OBSERVATION_CHARS = 4000  # per text in the page (observations, programs, model text); the rest is cut
PAGE_MAX_BYTES = 32 * 1024 * 1024  # turn views stop being rendered past this; the list still shows every episode
PAGE_MAX_EPISODES = 20_000  # episodes listed at most (a list row is ~0.5 KB)
FILTERS = (("task", "task_id"), ("harness", "harness"), ("stage", "stage"), ("verdict", "verdict"))
NONE_SHOWN = "—"  # an empty value (no stage) as the list and the filters show it: "" is the filters' "all"

_PAGE_CSS = """
body {font-family: system-ui, sans-serif; font-size: 13px; margin: 0; color: #222}
header {padding: 8px 14px; border-bottom: 1px solid #ddd; background: #fafafa}
header h1 {font-size: 16px; margin: 0 0 4px 0} .notice {color: #8a5a00}
#filters label {margin-right: 12px} #filters select {max-width: 260px}
main {display: grid; grid-template-columns: fit-content(50%) 1fr; height: calc(100vh - 90px)}
#episodes {overflow: auto; border-right: 1px solid #ddd}
#episodes table {border-collapse: collapse; width: 100%}
#episodes th {position: sticky; top: 0; background: #eee; text-align: left; padding: 4px 6px; white-space: nowrap}
#episodes td {padding: 3px 6px; border-bottom: 1px solid #eee; white-space: nowrap}
#episodes td.num {text-align: right} #episodes tr.ep {cursor: pointer}
#episodes td.task {max-width: 230px; overflow: hidden; text-overflow: ellipsis}
#episodes tr.ep:hover {background: #f0f6ff} #episodes tr.ep.selected {background: #dbe9ff}
.verdict-pass {color: #1b7f2a; font-weight: 600} .verdict-fail {color: #b00020; font-weight: 600}
.verdict-errored {color: #8a5a00; font-weight: 600}
#episode-view {overflow: auto; padding: 8px 14px}
.toolbar button {margin: 0 6px 6px 0}
"""

# The page's only script: it filters the list and shows one episode's pre-rendered turns. It puts no trajectory
# text into the page (no innerHTML): everything from the file is already escaped HTML.
_PAGE_JS = """
(() => {
  const rows = [...document.querySelectorAll('tr.ep')];
  const selects = [...document.querySelectorAll('select[data-key]')];
  const count = document.getElementById('shown-count');
  function applyFilters() {
    let shown = 0;
    for (const row of rows) {
      const keep = selects.every(s => s.value === '' || row.dataset[s.dataset.key] === s.value);
      row.hidden = !keep;
      if (keep) shown += 1;
    }
    count.textContent = shown + ' of ' + rows.length + ' episodes shown';
  }
  function openEpisode(id) {
    const view = document.getElementById('ep-' + id);
    if (!view) return;
    document.querySelectorAll('div.episode').forEach(d => { d.hidden = d !== view; });
    rows.forEach(r => r.classList.toggle('selected', r.dataset.episode === id));
    document.getElementById('placeholder').hidden = true;
    try { history.replaceState(null, '', '#ep-' + id); } catch (e) { /* some file:// pages refuse it */ }
  }
  function foldAll(open) {
    document.querySelectorAll('div.episode:not([hidden]) details').forEach(d => { d.open = open; });
  }
  selects.forEach(s => s.addEventListener('change', applyFilters));
  document.getElementById('episode-list').addEventListener('click', e => {
    const row = e.target.closest('tr.ep');
    if (row) openEpisode(row.dataset.episode);
  });
  document.getElementById('episode-list').addEventListener('keydown', e => {
    const row = e.target.closest('tr.ep');
    if (row && e.key === 'Enter') openEpisode(row.dataset.episode);
  });
  document.getElementById('expand-all').addEventListener('click', () => foldAll(true));
  document.getElementById('collapse-all').addEventListener('click', () => foldAll(false));
  applyFilters();
  const wanted = /^#ep-(\\d+)$/.exec(location.hash);
  if (wanted) openEpisode(wanted[1]);
})();
"""


def content_security_policy(script: str = _PAGE_JS) -> str:
    """The page may run only its own script (by hash), apply inline styles and fetch nothing at all: even text that
    slipped past escaping could neither run nor reach the network."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (
        f"default-src 'none'; script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )


def trajectories_page(
    trajectories: Iterable[Trajectory],
    *,
    title: str = "trajectories",
    max_observation_chars: int = PAGE_OBSERVATION_CHARS,
    max_bytes: int = PAGE_MAX_BYTES,
    max_episodes: int = PAGE_MAX_EPISODES,
    count_skipped: Callable[[], int] = lambda: 0,
) -> str:
    """Trajectories as one self-contained HTML page: a list of episodes (task, harness, stage, scale and seed, verdict,
    R, R~, turns, tool-output tokens) with filters by task, harness, stage and verdict, and the turn-by-turn view of
    the selected episode (`trajectory_html`). Nothing is fetched: the style and the script are inline.

    Bounds: each text is cut at `max_observation_chars` with a marker; once the turn views reach `max_bytes`, later
    episodes are listed without their turns (the page says so); past `max_episodes` episodes are not listed.
    `count_skipped`, called once the trajectories are read, says how many lines of their file could not be."""
    rows, views, notices = [], [], []
    values: dict[str, set[str]] = {key: set() for key, _ in FILTERS}
    used = total = 0
    for index, trajectory in enumerate(trajectories):
        total += 1
        if index >= max_episodes:
            continue
        metrics = _list_metrics(trajectory)
        view = (
            _episode_view(trajectory, max_observation_chars)
            if used < max_bytes
            else _NOT_RENDERED.format(budget=_size(max_bytes))
        )
        used += len(view)
        rows.append(_list_row(index, metrics))
        views.append(f"<div class='episode' id='ep-{index}' hidden>{view}</div>")
        for key, field in FILTERS:
            values[key].add(metrics[field])
    if total > max_episodes:
        notices.append(f"the file holds {total} episodes; the first {max_episodes} are listed")
    if used >= max_bytes:
        notices.append(f"turns are shown for the episodes within the page's budget of {_size(max_bytes)}")
    if count_skipped():
        notices.append(f"{count_skipped()} line(s) of the file were not whole trajectories and were skipped")
    notices.append(f"texts longer than {max_observation_chars} characters are cut, with a marker")
    return _page(title, rows, views, values, notices)


_NOT_RENDERED = (
    "<p class='notice'>The turns of this episode are not in the page: it reached its budget of {budget}. "
    "Run <code>progagent view</code> with a larger <code>--max-page-mb</code>, or on fewer episodes.</p>"
)


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n // 1024} KB" if n < 1024 * 1024 else f"{n // (1024 * 1024)} MB"


def _list_metrics(trajectory: Trajectory) -> dict:
    """The list row's fields as short strings (a hostile file may hold anything where a number belongs)."""
    shown = {
        key: clean_text(_cut("" if value is None else str(value), 200))
        for key, value in episode_overview(trajectory).items()
    }
    for _, field in FILTERS:
        shown[field] = shown[field] or NONE_SHOWN
    return shown


def _episode_view(trajectory: Trajectory, max_observation_chars: int) -> str:
    try:
        return trajectory_html(trajectory, max_observation_chars, style=False)
    except (TypeError, ValueError, AttributeError, KeyError) as exc:  # a record whose fields have the wrong types
        return f"<p class='notice'>This episode cannot be shown: {_shown(type(exc).__name__)}: {_value(exc)}</p>"


def _list_row(index: int, m: dict) -> str:
    data = "".join(f" data-{key}='{html.escape(m[field], quote=True)}'" for key, field in FILTERS)
    cells = [m["harness"], m["stage"], f"{m['scale']} / {m['seed']}"]
    numbers = [_number(m["reward"], 0), _number(m["score"], 2), m["turns"], m["tool_output_tokens"]]
    task = html.escape(m["task_id"], quote=True)  # a long id is cut by the style; its title shows it whole
    return (
        f"<tr class='ep' tabindex='0' data-episode='{index}'{data}><td class='num'>{index + 1}</td>"
        f"<td class='task' title='{task}'>{task}</td>"
        + "".join(f"<td>{html.escape(c)}</td>" for c in cells)
        + f"<td class='verdict-{html.escape(m['verdict'])}'>{html.escape(m['verdict'])}</td>"
        + "".join(f"<td class='num'>{html.escape(n)}</td>" for n in numbers)
        + "</tr>"
    )


def _number(text: str, digits: int) -> str:
    try:
        return f"{float(text):.{digits}f}"
    except ValueError:
        return text


def _page(title: str, rows: list[str], views: list[str], values: dict[str, set[str]], notices: list[str]) -> str:
    selects = "".join(
        f"<label>{key} <select id='filter-{key}' data-key='{key}'><option value=''>all ({len(values[key])})</option>"
        + "".join(
            f"<option value='{html.escape(v, quote=True)}'>{html.escape(v)}</option>" for v in sorted(values[key])
        )
        + "</select></label>"
        for key, _ in FILTERS
    )
    header = (
        "<tr><th>#</th><th>task</th><th>harness</th><th>stage</th><th>scale/seed</th><th>verdict</th>"
        "<th>R</th><th>R~</th><th>turns</th><th title='tool-output tokens that entered the context'>tokens</th>"
        "</tr>"
    )
    return (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        f"<meta http-equiv='Content-Security-Policy' content=\"{content_security_policy()}\">"
        "<meta name='referrer' content='no-referrer'><meta name='viewport' content='width=device-width'>"
        f"<title>progagent view: {_value(title)}</title><style>{_PAGE_CSS}{_TRAJECTORY_CSS}</style></head><body>"
        f"<header><h1>progagent view: {_value(title)}</h1><div id='filters'>{selects}<span id='shown-count'></span>"
        "</div><div class='notice'>" + " · ".join(html.escape(n) for n in notices) + "</div></header><main>"
        f"<section id='episodes'><table><thead>{header}</thead><tbody id='episode-list'>{''.join(rows)}</tbody></table>"
        "</section><section id='episode-view'><div class='toolbar'><button id='expand-all' type='button'>expand all"
        "</button><button id='collapse-all' type='button'>collapse all</button></div>"
        "<p id='placeholder'>Select an episode in the list to see its turns.</p>"
        f"{''.join(views)}</section></main><script>{_PAGE_JS}</script></body></html>"
    )
