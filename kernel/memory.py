"""Long-term memory: facts an agent keeps per user across runs, recalled into the next run's context.

Why this shape:
- A memory is a key-value pair in a *scope* (the agent and the user it served), so writing the
  same key again updates the fact instead of piling up contradictions, and one user's memories
  never reach another user's run.
- Recall filters by recency (a maximum age) and relevance (a swappable `Scorer`: the lexical
  default needs no model; `embedding_scorer` turns any embedding function into one), then a cap on
  characters bounds what enters the context, because memories that crowd out the task cost more
  than they help. What the cap left out is counted on the span, not silently dropped.
- The store is a small `MemoryStore` protocol; `SQLiteMemoryStore` (the standard library's sqlite3,
  one local file) is the default, and another store (a service, DuckDB) only implements four methods.
- Every recall and write is a span (`search_memory {store}` / `upsert_memory {store}`, the GenAI
  memory operations), so a trace shows which memories a run was given.
"""

from __future__ import annotations

import functools
import math
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from kernel import telemetry
from kernel.tokens import estimate_tokens
from kernel.tools import Tool, tool

Scorer = Callable[[str, str], float]  # (query, memory text) -> relevance in [0, 1]

_WORD = re.compile(r"\w+", re.UNICODE)
# The line that opens the recalled memories in the system prompt (one "- key: value" line each follows).
RECALL_HEADER = "What you remember about this user from earlier conversations:"
REMEMBER_TOOL_NAME = "remember"  # the tool the agent registers for the model to write memories


@dataclass(frozen=True)
class MemoryRecord:
    """One remembered fact; `updated_at` (epoch seconds) is what recency is measured from."""

    scope: str
    key: str
    value: str
    updated_at: float

    @property
    def text(self) -> str:
        """What relevance is scored on and what the model reads."""
        return f"{self.key}: {self.value}"


class MemoryStore(Protocol):
    """Where memories live. Implement these for another backend; `LongTermMemory` does the rest."""

    name: str

    def put(self, record: MemoryRecord) -> None:
        """Insert or replace the record with the same (scope, key)."""

    def since(self, scope: str, min_updated_at: float) -> list[MemoryRecord]:
        """The scope's records updated at or after `min_updated_at`, newest first."""

    def delete(self, scope: str, key: str) -> bool:
        """Remove one record; True when it existed."""

    def close(self) -> None:
        """Release the backend."""


class SQLiteMemoryStore:
    """Memories in one SQLite file (stdlib). Safe to share between the runs of one process: one
    connection behind a lock, every statement parameterized."""

    def __init__(self, path: str | Path, *, name: str | None = None) -> None:
        self.path = Path(path)
        self.name = name or self.path.stem
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        with self._lock, self._db:
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS memories (scope TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL,"
                " updated_at REAL NOT NULL, PRIMARY KEY (scope, key))"
            )

    def put(self, record: MemoryRecord) -> None:
        with self._lock, self._db:
            self._db.execute(
                "INSERT INTO memories (scope, key, value, updated_at) VALUES (?, ?, ?, ?)"
                " ON CONFLICT (scope, key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at",
                (record.scope, record.key, record.value, record.updated_at),
            )

    def since(self, scope: str, min_updated_at: float) -> list[MemoryRecord]:
        with self._lock:
            rows = self._db.execute(
                "SELECT scope, key, value, updated_at FROM memories WHERE scope = ? AND updated_at >= ?"
                " ORDER BY updated_at DESC",
                (scope, min_updated_at),
            ).fetchall()
        return [MemoryRecord(*row) for row in rows]

    def delete(self, scope: str, key: str) -> bool:
        with self._lock, self._db:
            cur = self._db.execute("DELETE FROM memories WHERE scope = ? AND key = ?", (scope, key))
        return cur.rowcount > 0

    def close(self) -> None:
        with self._lock:
            self._db.close()


def lexical_score(query: str, text: str) -> float:
    """Overlap of distinct case-folded words, over the smaller of the two word sets: cheap, no
    model, 0 for a memory sharing nothing with the task. Dividing by the smaller set (not by the
    query's) keeps a short memory that matches a long task's one key word relevant."""
    wanted = {w.casefold() for w in _WORD.findall(query or "")}
    have = {w.casefold() for w in _WORD.findall(text or "")}
    if not wanted or not have:
        return 0.0
    return len(wanted & have) / min(len(wanted), len(have))


def embedding_scorer(embed: Callable[[str], Sequence[float]]) -> Scorer:
    """A `Scorer` from an embedding function: cosine similarity clipped to [0, 1]. Embeddings are
    cached (the most recent 4096 texts), so a recall embeds its query once, not once per memory,
    and a memory is embedded again only after it fell out of the cache."""

    @functools.lru_cache(maxsize=4096)
    def vector(text: str) -> Sequence[float]:
        return tuple(embed(text))

    def score(query: str, text: str) -> float:
        a, b = vector(query), vector(text)
        norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
        return max(0.0, min(1.0, sum(x * y for x, y in zip(a, b, strict=False)) / norm)) if norm else 0.0

    return score


@dataclass
class Recall:
    """What one recall found: the memories injected (best first) and what the cap left out."""

    memories: list[MemoryRecord] = field(default_factory=list)
    candidates: int = 0
    capped: int = 0

    def as_context(self) -> str:
        """The block the agent adds to its system prompt ('' when nothing was recalled)."""
        if not self.memories:
            return ""
        lines = "\n".join(f"- {m.text}" for m in self.memories)
        return f"{RECALL_HEADER}\n{lines}"


def memory_scope(agent_id: str, user_id: str | None) -> str:
    """Memories belong to an agent and the user it served (`-` for runs without a user)."""
    return f"{agent_id}/{user_id or '-'}"


class LongTermMemory:
    """Write and recall memories of one store; give it to `Agent(memory=...)` to use it in runs.

    max_age_s: memories not updated for longer are not recalled (None: any age).
    min_score: relevance a memory needs to be recalled.
    max_items / max_chars / max_tokens: the cap on what one recall injects into the context
    (tokens as `kernel.tokens.estimate_tokens` counts them, so CJK memories are not undercounted;
    None: no token cap beyond the characters).
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        scorer: Scorer = lexical_score,
        max_age_s: float | None = 90 * 24 * 3600,
        min_score: float = 0.2,
        max_items: int = 5,
        max_chars: int = 1500,
        max_tokens: int | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if max_items < 1 or max_chars < 1 or (max_tokens is not None and max_tokens < 1):
            raise ValueError("max_items, max_chars and max_tokens must be >= 1")
        self.store = store
        self.scorer = scorer
        self.max_age_s = max_age_s
        self.min_score = min_score
        self.max_items = max_items
        self.max_chars = max_chars
        self.max_tokens = max_tokens
        self.clock = clock

    def write(self, scope: str, key: str, value: str) -> MemoryRecord:
        """Remember `value` under `key` (an existing key is updated and becomes recent again)."""
        record = MemoryRecord(scope=scope, key=str(key).strip(), value=str(value).strip(), updated_at=self.clock())
        if not record.key:
            raise ValueError("a memory needs a non-empty key")
        with telemetry.memory_span("upsert", self.store.name, scope, key=record.key, content=record.value):
            self.store.put(record)
        return record

    def recall(self, scope: str, query: str) -> Recall:
        """The scope's recent memories relevant to `query`, best first, within the cap."""
        with telemetry.memory_span("search", self.store.name, scope, query=query) as span:
            floor = self.clock() - self.max_age_s if self.max_age_s is not None else float("-inf")
            recent = self.store.since(scope, floor)
            scored = [(self.scorer(query, m.text), m) for m in recent]
            relevant = [m for s, m in sorted(scored, key=lambda p: (-p[0], -p[1].updated_at)) if s >= self.min_score]
            kept: list[MemoryRecord] = []
            used = used_tokens = 0
            for m in relevant:
                size = len(m.text) + 3  # "- " and the line break
                tokens = estimate_tokens(f"- {m.text}\n")
                over_tokens = self.max_tokens is not None and used_tokens + tokens > self.max_tokens
                if len(kept) >= self.max_items or used + size > self.max_chars or over_tokens:
                    continue
                kept.append(m)
                used += size
                used_tokens += tokens
            result = Recall(memories=kept, candidates=len(recent), capped=len(relevant) - len(kept))
            span.record_recall(result)
        return result

    def remember_tool(self, current_scope: Callable[[], str | None]) -> Tool:
        """The `remember` tool the agent registers: the model decides what is worth keeping.
        `current_scope` answers the running run's scope (the tool object is shared by runs)."""

        @tool(name=REMEMBER_TOOL_NAME, side_effect=True)
        async def remember(key: str, value: str) -> str:
            """Remember a fact about the user for later conversations (a preference, an account
            detail, a decision). The same key again replaces the old fact."""
            scope = current_scope()
            if scope is None:
                raise RuntimeError("remember was called outside an agent run")
            record = self.write(scope, key, value)
            return f"remembered {record.key!r}"

        return remember
