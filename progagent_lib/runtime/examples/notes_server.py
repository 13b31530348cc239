"""A small external MCP server for tests and demos: an in-memory notebook.

It stands for "any MCP server" when showing the client bridge: run it on stdio
(`python notes_server.py`) or streamable HTTP (`python notes_server.py --http 8765`, endpoint
http://127.0.0.1:8765/mcp), then pass either form to `MCPToolSource` or
`PTCRuntime(mcp_servers=[...])`. It is built with the SDK's own high-level server, independently
of this project, so it behaves like a third-party server would.

`legacy_lookup` imitates servers that report failure inside an ordinary result instead of setting
`isError`, which is what the runtime's `detect` error mode is for.
"""

from __future__ import annotations

import argparse

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("notes", log_level="WARNING", instructions="An in-memory notebook: add, list and fetch short notes.")
_notes: list[dict] = []


@server.tool()
def add_note(text: str, tag: str = "general") -> dict:
    """Store a note and return it with its id.

    Args:
        text: The note's text.
        tag: A label to group notes by.
    """
    if not text.strip():
        raise ToolError("text is empty: pass the note's text")
    note = {"id": len(_notes) + 1, "text": text, "tag": tag}
    _notes.append(note)
    return note


@server.tool()
def list_notes(tag: str | None = None) -> list[dict]:
    """List stored notes, optionally only those with one tag.

    Args:
        tag: Only notes with this tag; all notes when omitted.
    """
    return [n for n in _notes if tag is None or n["tag"] == tag]


@server.tool()
def get_note(note_id: int) -> dict:
    """Fetch one note by id.

    Args:
        note_id: The id returned by add_note.
    """
    for note in _notes:
        if note["id"] == note_id:
            return note
    raise ToolError(f"no note with id {note_id}; list_notes shows the ids that exist")


@server.tool()
def word_count(text: str) -> int:
    """Count the words in a text.

    Args:
        text: Any text.
    """
    return len(text.split())


@server.tool()
def legacy_lookup(key: str) -> dict:
    """Look a key up in an old directory service (reports failures in the payload, without isError).

    Args:
        key: The key to look up; only "alpha" exists.
    """
    if key == "alpha":
        return {"key": "alpha", "value": 1}
    return {"error": f"key {key!r} not found"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT instead of stdio"
    )
    args = parser.parse_args()
    if args.http:
        server.run("streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run("stdio")


if __name__ == "__main__":
    main()
