"""`with` support and close-on-garbage-collection for objects that own processes, files or connections."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class Closeable(ABC):
    """Subclasses define `close()` (idempotent); this adds the context manager and a best-effort finaliser."""

    @abstractmethod
    def close(self) -> None:
        """Release what the object owns; calling it again does nothing."""

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown, half-built objects: nothing left to clean
            pass
