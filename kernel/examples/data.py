"""Shared pieces of the example agents' worlds."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field


class NotFound(LookupError):  # noqa: N818 - reads as the condition the model sees: "NotFound: {...}"
    """A structured not-found error. Raised by example tools; dispatch shows the model
    `TOOL_ERROR {"error": "exception", "message": "NotFound: {\\"entity\\": ..., \\"id\\": ...}"}`, so
    both the model and someone reading stored runs can tell "does not exist" from "broke"."""

    def __init__(self, entity: str, key: str, hint: str = "") -> None:
        body = {"error": "not_found", "entity": entity, "id": key}
        if hint:
            body["hint"] = hint
        super().__init__(json.dumps(body))
        self.entity = entity
        self.key = key


def short_id(prefix: str, *parts: object) -> str:
    """A stable id derived from the content (same request → same id), so runs are reproducible."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8].upper()
    return f"{prefix}-{digest}"


@dataclass(frozen=True)
class Task:
    """One piece of work for an agent, with what a right answer must contain (for tests and evals)."""

    agent: str
    kind: str
    text: str
    expect: tuple[str, ...] = ()


@dataclass
class Ledger:
    """Side effects the tools performed (refunds, escalations, resolutions), for inspection."""

    entries: list[dict] = field(default_factory=list)

    def record(self, action: str, **details: object) -> None:
        self.entries.append({"action": action, **details})
