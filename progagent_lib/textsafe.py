"""Text from programs, shells and tools made safe to show: no character in it acts on a terminal or a renderer.

A program's output, a shell command's output, a tool's result and an MCP server's reply reach the model's
context and the trajectory records, where a person later reads them in a terminal or a notebook. There,
some characters are not shown but obeyed: `\\r` and `\\b` move the cursor back so later text overwrites
earlier text, U+202E (right-to-left override) shows the text after it reversed, U+009B (the 8-bit CSI) and
ESC start terminal commands (clear the screen, move the cursor, set the window title). Any of them lets
text that a program printed look like something else than it is.

`clean_text` applies these rules, in one pass of one compiled pattern (after `\\r\\n` became `\\n`):

- `\\n` and `\\t` stay; `\\r\\n` becomes `\\n` (a Windows line end is a line end);
- a whole 7-bit escape sequence is removed: CSI (`ESC [ ... final`: colours, cursor moves, erasing), OSC
  (`ESC ] ... BEL|ST`: titles, hyperlinks), DCS/SOS/PM/APC strings, character set designations
  (`ESC ( B`) and keypad modes (`ESC =`, `ESC >`). These are mostly the colours of tracebacks and of
  command-line tools; showing them would bury every traceback in noise, and removing one hides no text
  (what it would have moved or erased stays in place, in order). Any other ESC is shown as `\\x1b`, and
  the characters after it stay text;
- every other control character is shown as its escape, so the reader sees that something was there and
  what: the C0 controls but `\\n` and `\\t` (`\\r`, `\\x08`, `\\x07`, `\\x00`, ...), a lone ESC (`\\x1b`),
  DEL (`\\x7f`), the C1 controls U+0080-U+009F (`\\x9b`, so an 8-bit CSI sequence shows as the text
  `\\x9b31m`), and the bidirectional controls U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069
  (`\\u202e`). A run of more than 16 of them (a binary file sent to the terminal) shows its first 8 and
  how many more there were. Escaping can still make a text up to six times longer (a bidirectional
  control is one character, its escape six): callers that promise a bound cut again after cleaning.

The escapes are plain ASCII, so `clean_text` is idempotent. A literal backslash is left alone: the printed
text `\\x9b` and an escaped U+009B read the same, which deceives no one.

For records on disk, `escape_controls_in_json` writes the same characters as JSON `\\uXXXX` escapes, which
read back unchanged: a record keeps exactly what happened (the model's own text included), and a terminal
showing the file shows the escapes instead of obeying them.

This module imports nothing from the project, so every layer can use it.
"""

from __future__ import annotations

import re
from typing import Any

# Characters acted on instead of shown: C0 controls but \t and \n, DEL, C1 controls, bidirectional controls.
CONTROL_CHARS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_NOT_ESC = CONTROL_CHARS.replace("\x0b-\x1f", "\x0b-\x1a\x1c-\x1f")
_UNSAFE = re.compile(
    "(?P<sequence>"
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: ESC [ parameters intermediates final
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: ESC ] text, ended by BEL or ST (ESC \)
    r"|\x1b[PX^_][^\x1b]*\x1b\\"  # DCS, SOS, PM, APC strings, ended by ST
    r"|\x1b[()*+][ -~]|\x1b[=>]"  # character set designations, keypad modes (tput, less)
    ")"
    f"|(?P<run>[{_NOT_ESC}]+|\x1b)"
)
_JSON_RAW = re.compile(f"[{CONTROL_CHARS}]")
RUN_SHOWN = 16  # a run up to this long is shown whole; a longer one by its first RUN_SHOWN // 2 and a count


def _escape(char: str) -> str:
    code = ord(char)
    if char == "\r":
        return "\\r"
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _replace(match: re.Match) -> str:
    run = match.group("run")
    if run is None:
        return ""  # a whole 7-bit escape sequence
    if len(run) <= RUN_SHOWN:
        return "".join(map(_escape, run))
    head = run[: RUN_SHOWN // 2]
    return "".join(map(_escape, head)) + f"[... {len(run) - len(head)} more control characters]"


def clean_text(text: str) -> str:
    """`text` with escape sequences removed and every other control character shown as its escape (module doc)."""
    if not isinstance(text, str):
        return text
    return _UNSAFE.sub(_replace, text.replace("\r\n", "\n"))


def clean_value(value: Any) -> Any:
    """`value` with `clean_text` applied to every string in it (dict keys and values, list and tuple items)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        return {clean_value(k): clean_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(clean_value(v) for v in value)
    return value


def escape_controls_in_json(json_text: str) -> str:
    """A JSON text with the control characters JSON leaves raw (DEL, C1, bidirectional) as `\\uXXXX` escapes.

    JSON already escapes U+0000-U+001F; `json.dumps(..., ensure_ascii=False)` writes the rest as they are.
    They occur only inside strings, where the escape decodes to the same character: nothing read back changes.
    """
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", json_text)


__all__ = ["CONTROL_CHARS", "clean_text", "clean_value", "escape_controls_in_json"]
