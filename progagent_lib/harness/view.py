"""A trajectory as HTML for notebooks: one collapsible block per turn, code highlighted, sizes shown."""
from __future__ import annotations

import html
import json
from typing import TYPE_CHECKING

from ..textsafe import clean_text
from .spec import PROGRAMMATIC_TOOL_CALL

if TYPE_CHECKING:   # trajectory.py imports this module to show itself: no import back at run time
    from .trajectory import Trajectory

_STYLE = """
<style>
.pa-traj {font-family: system-ui, sans-serif; font-size: 13px; max-width: 1000px}
.pa-traj details {border: 1px solid #ddd; border-radius: 4px; margin: 4px 0; padding: 2px 8px}
.pa-traj summary {cursor: pointer; font-weight: 600}
.pa-traj pre {white-space: pre-wrap; background: #f7f7f7; padding: 6px; margin: 4px 0; max-height: 400px; overflow: auto}
.pa-traj .err {color: #b00020} .pa-traj .meta {color: #666; font-weight: normal}
.pa-traj .think {color: #555; font-style: italic}
</style>
"""


def _shown(text: str) -> str:
    """Text as HTML, with its control characters removed or shown as escapes (textsafe.clean_text) first: a
    browser obeys a bidirectional override too, and a program's code or a model's text can hold one."""
    return html.escape(clean_text(text))


def _code(code: str, language: str = "python") -> str:
    code = clean_text(code)  # "Trojan Source": bidirectional controls in code make it read otherwise than it runs
    try:  # pygments comes with Jupyter; without it the code is shown plain
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import get_lexer_by_name

        return highlight(code, get_lexer_by_name(language), HtmlFormatter(noclasses=True, nobackground=True))
    except ImportError:
        return f"<pre>{html.escape(code)}</pre>"


def trajectory_html(trajectory: Trajectory, max_observation_chars: int = 5000) -> str:
    """The episode as HTML: header with the verdict and metrics, then each turn with its calls."""
    t = trajectory
    head = (f"<b>{_shown(t.task_id)}</b> · {t.scale} · seed {t.seed} · {t.harness} · {_shown(t.policy)} — "
            f"R={t.reward:.0f}, R~={t.score:.2f}, ended by {_shown(t.end_reason)}<br>"
            f"<span class='meta'>{t.turns} turns · {t.model_tool_calls} model tool calls · {t.tool_calls} task-tool calls · "
            f"{t.tool_output_tokens} tool-output tokens ({_shown(t.token_counter)}) · "
            f"{t.runtime_errors} runtime errors · {t.seconds:.1f} s</span>"
            + (f"<br><span class='meta'>instance parameters: {_shown(json.dumps(t.params, ensure_ascii=False))}</span>"
               if t.params else ""))
    criteria = "".join(f"<li>{'✔' if c['passed'] else '✘'} {_shown(c['name'])} "
                       f"<span class='meta'>{_shown(c.get('detail', ''))}</span></li>" for c in t.criteria)
    blocks = [f"<details><summary>Prompt</summary><pre>{_shown(_user_prompt(t))}</pre></details>"]
    calls_by_turn: dict[int, list] = {}
    for call in t.calls:
        calls_by_turn.setdefault(call.turn, []).append(call)
    assistant_turns = [m for m in t.messages if m.get("role") == "assistant"]
    for index, message in enumerate(assistant_turns):
        calls = calls_by_turn.get(index, [])
        tokens = sum(c.observation_tokens for c in calls)
        names = ", ".join(c.name for c in calls) or "no tool call"
        parts = []
        if message.get("reasoning_content"):
            parts.append(f"<div class='think'>{_shown(message['reasoning_content'])}</div>")
        if message.get("content"):
            parts.append(f"<pre>{_shown(message['content'])}</pre>")
        for call in calls:
            flag = " class='err'" if call.is_error else ""
            if call.name == PROGRAMMATIC_TOOL_CALL:
                shown = _code(call.arguments.get("code", ""))
                structure = call.program
                note = (f" · {structure.loops} loops, {structure.conditionals} ifs, {structure.try_blocks} try, "
                        f"{call.task_tool_calls} tool calls{' · DTC-like' if structure.dtc_like else ''}") if structure else ""
            else:
                shown = f"<pre>{_shown(json.dumps(call.arguments, ensure_ascii=False, indent=1)[:max_observation_chars])}</pre>"
                note = ""
            observation = call.observation if len(call.observation) <= max_observation_chars else \
                call.observation[:max_observation_chars] + f"\n… ({len(call.observation) - max_observation_chars} more characters)"
            parts.append(f"<div><b{flag}>{_shown(call.name)}</b><span class='meta'>{note}</span>{shown}"
                         f"<details><summary{flag}>observation <span class='meta'>{call.observation_tokens} tokens · "
                         f"{len(call.observation)} chars · {call.seconds:.2f} s</span></summary>"
                         f"<pre{flag}>{_shown(observation)}</pre></details></div>")
        blocks.append(f"<details><summary>Turn {index + 1}: {_shown(names)} "
                      f"<span class='meta'>({tokens} observation tokens)</span></summary>{''.join(parts)}</details>")
    return (f"{_STYLE}<div class='pa-traj'><p>{head}</p>{''.join(blocks)}"
            f"<p>Final answer: <code>{_shown(t.final_answer or '')}</code></p><ul>{criteria}</ul></div>")


def _user_prompt(t: Trajectory) -> str:
    return next((m["content"] for m in t.messages if m.get("role") == "user"), "")
