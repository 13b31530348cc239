"""`with` support and close-on-garbage-collection for objects that own processes, files or connections."""
from __future__ import annotations

from typing import Any


class Closeable:
    """Subclasses define `close()` (idempotent); this adds the context manager and a best-effort finaliser."""

    def close(self) -> None:  # pragma: no cover - always overridden
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown, half-built objects: nothing left to clean
            pass
