"""Verifier records: named, weighted criteria and the rewards derived from them."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Criterion:
    """One check of the final response or the final environment state."""

    name: str
    passed: bool
    weight: float = 1.0
    detail: str = ""

    def __post_init__(self) -> None:
        self.passed = bool(self.passed)
        if self.weight <= 0:
            raise ValueError(f"criterion {self.name!r}: weight must be positive, got {self.weight}")


@dataclass
class VerifyResult:
    """The verifier's verdict: dense score R~ (weighted mean) and binary reward R (all passed)."""

    criteria: list[Criterion] = field(default_factory=list)

    @property
    def score(self) -> float:
        total = sum(c.weight for c in self.criteria)
        return sum(c.weight for c in self.criteria if c.passed) / total if total else 0.0

    @property
    def reward(self) -> float:
        return 1.0 if self.criteria and all(c.passed for c in self.criteria) else 0.0

    def failed(self) -> list[Criterion]:
        return [c for c in self.criteria if not c.passed]

    def to_dict(self) -> dict:
        return {"score": self.score, "reward": self.reward, "criteria": [asdict(c) for c in self.criteria]}

    def summary(self) -> str:
        lines = [f"R={self.reward:.0f}  R~={self.score:.3f}"]
        lines += [f"  [{'x' if c.passed else ' '}] {c.name} (w={c.weight:g}) {c.detail}" for c in self.criteria]
        return "\n".join(lines)
