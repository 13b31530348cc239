"""Workspace file tools shared by tasks: list, read and write files in the episode's workspace.

Most tasks hide their constraints in unstructured files (memos, policies, e-mails). A DTC agent can
only reach those through tools, so tasks inherit these three instead of writing their own.

The tools run on the host while the program's kernel can change the workspace under them, so every
access goes through `Environment.fs` (see `safe_fs`): opened beneath the workspace with no symlink
followed, never blocking, regular files only.
"""

from __future__ import annotations

import fnmatch

from .environment import Environment
from .pagination import paginate
from .tools import ToolError, tool

MAX_READ_CHARS = 20_000


class WorkspaceEnvironment(Environment):
    """An Environment with `list_files`, `read_file` and `write_file` tools over its workspace."""

    @tool
    def list_files(self, pattern: str = "*", page: int = 1) -> dict:
        """List files in the workspace, 20 per page, sorted by path.

        Args:
            pattern: Shell-style pattern matched against the relative path, e.g. "memos/*.md".
            page: 1-based page number.
        """
        files = self.fs.files(self.check_deadline)  # regular files only: links are neither followed nor listed
        matched = [{"path": path, "bytes": size} for path, size in files if fnmatch.fnmatch(path, pattern)]
        return paginate(matched, page)

    @tool
    def read_file(self, path: str) -> str:
        """Read a text file from the workspace.

        Args:
            path: Path relative to the workspace root, e.g. "memos/supplier_update.md".
        """
        return self.fs.read_text(path, MAX_READ_CHARS)

    @tool
    def write_file(self, path: str, content: str) -> dict:
        """Create or overwrite a text file in the workspace.

        Args:
            path: Path relative to the workspace root; folders are created as needed.
            content: The full text to write.
        """
        try:
            data = content.encode("utf-8", errors="surrogateescape")  # a name or text read back as is
        except UnicodeEncodeError as exc:
            raise ToolError(f"content cannot be written as UTF-8 ({exc.reason} at {exc.start})") from None
        if self.workspace_quota is not None and len(data) > self.workspace_quota:
            raise ToolError(f"{len(data)} bytes are more than the workspace quota of {self.workspace_quota} bytes")
        self.fs.write_bytes(path, data, self.check_deadline)
        return {"path": path, "bytes": len(data)}
