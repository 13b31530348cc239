"""Workspace file tools shared by tasks: list, read and write files in the episode's workspace.

Most tasks hide their constraints in unstructured files (memos, policies, e-mails). A DTC agent can
only reach those through tools, so tasks inherit these three instead of writing their own.
"""
from __future__ import annotations

import fnmatch
from pathlib import Path

from .environment import Environment
from .pagination import paginate
from .tools import ToolError, tool

MAX_READ_CHARS = 20_000


class WorkspaceEnvironment(Environment):
    """An Environment with `list_files`, `read_file` and `write_file` tools over its workspace."""

    def _resolve(self, path: str) -> Path:
        if not path or path.startswith("/") or "\x00" in path:
            raise ToolError(f"path must be relative to the workspace, got {path!r}")
        resolved = (self.workspace / path).resolve()
        if not resolved.is_relative_to(self.workspace.resolve()):
            raise ToolError(f"path {path!r} leaves the workspace")
        return resolved

    @tool
    def list_files(self, pattern: str = "*", page: int = 1) -> dict:
        """List files in the workspace, 20 per page, sorted by path.

        Args:
            pattern: Shell-style pattern matched against the relative path, e.g. "memos/*.md".
            page: 1-based page number.
        """
        root = self.workspace
        files = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
        matched = [f for f in files if fnmatch.fnmatch(f, pattern)]
        result = paginate([{"path": f, "bytes": (root / f).stat().st_size} for f in matched], page)
        return result

    @tool
    def read_file(self, path: str) -> str:
        """Read a text file from the workspace.

        Args:
            path: Path relative to the workspace root, e.g. "memos/supplier_update.md".
        """
        resolved = self._resolve(path)
        if not resolved.is_file():
            raise ToolError(f"no file {path!r} in the workspace; use list_files to see what exists")
        text = resolved.read_text(errors="replace")
        if len(text) > MAX_READ_CHARS:
            raise ToolError(f"{path!r} has {len(text)} characters, more than {MAX_READ_CHARS}; it cannot be read whole")
        return text

    @tool
    def write_file(self, path: str, content: str) -> dict:
        """Create or overwrite a text file in the workspace.

        Args:
            path: Path relative to the workspace root; folders are created as needed.
            content: The full text to write.
        """
        resolved = self._resolve(path)
        resolved.parent.mkdir(parents=True, exist_ok=True)
        resolved.write_text(content)
        return {"path": path, "bytes": len(content.encode())}
