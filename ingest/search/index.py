"""The full-text index: SQLite FTS5 (the standard library's sqlite3) in a sidecar file next to the DuckDB one.

Why SQLite FTS5: DuckDB's fts extension is a download outside the package registries; FTS5 ships
with Python, ranks by BM25, makes highlighted snippets, answers a term query over millions of
documents in milliseconds, and its WAL mode lets the API's readers query while the writer thread adds
documents. One document per (span, field) so a hit says where it matched; `docs` keeps the span's key,
project and start time (what scoping, time ranges and dedup need) and its UNIQUE key makes indexing a
span twice (a retry after a crash, a rebuild overlapping live indexing) a no-op.

Only the writer thread writes (ingest/search/indexer.py); readers open their own read-only connections.
User text never reaches FTS5's query syntax: each word becomes a quoted phrase (`query_expression`).

The number of documents is a counter in `meta` (META_DOCUMENTS), changed in the same transaction that
adds or removes documents: `count(*)` over millions of FTS rows costs tens of milliseconds, and every
status answer reports the number. An index made before the counter is counted once when the writer
opens it; until then readers report the number as unknown (None), never as a guess.
"""

from __future__ import annotations

import logging
import re
import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from ingest.search.content import content_fields

log = logging.getLogger(__name__)

# Markers FTS5 puts around matched words in a snippet (control characters no indexed text keeps:
# they are stripped from documents), split into segments before the answer leaves the server.
HIT_OPEN, HIT_CLOSE = "\x02", "\x03"
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
MAX_QUERY_WORDS = 16
SNIPPET_TOKENS = 24
RANK_WINDOW = 20_000  # matches ranked per query: the most recently indexed ones (design.md §4)
EPOCH = datetime(1970, 1, 1)
META_DOCUMENTS = "documents"  # rows of `docs`, kept exact by every write (see the module docstring)

_SCHEMA = [
    "PRAGMA journal_mode=WAL",
    """CREATE TABLE IF NOT EXISTS docs (
        id INTEGER PRIMARY KEY,
        project TEXT NOT NULL, trace_id TEXT NOT NULL, span_id TEXT NOT NULL,
        start_us INTEGER NOT NULL,   -- the span's start, microseconds since the epoch (UTC)
        field TEXT NOT NULL,         -- attribute key, status_message or events
        UNIQUE (project, trace_id, span_id, field))""",
    "CREATE INDEX IF NOT EXISTS docs_start ON docs (start_us)",
    "CREATE VIRTUAL TABLE IF NOT EXISTS body USING fts5(text, tokenize = 'unicode61 remove_diacritics 2')",
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)",
]


def to_us(dt: datetime) -> int:
    return (dt - EPOCH) // timedelta(microseconds=1)


def from_us(us: int) -> datetime:
    return EPOCH + timedelta(microseconds=us)


def query_words(text: str) -> list[str]:
    """The query grammar, one for every store: the words of user text (whitespace separated, at most
    MAX_QUERY_WORDS), each one phrase that must occur in the document. Operators, quotes and column
    filters in the text are just words. Each store's target turns the words into its own query:
    `query_expression` (FTS5 here), ingest/store/clickhouse/queries/search.py (ClickHouse)."""
    return [w for w in _CONTROL.sub(" ", text).split() if w.strip()][:MAX_QUERY_WORDS]


def query_expression(text: str) -> str | None:
    """An FTS5 MATCH expression for user text: every word a quoted phrase, all of them required.
    None when the text has no words."""
    words = query_words(text)
    if not words:
        return None
    return " ".join('"' + w.replace('"', '""') + '"' for w in words)


class IndexUnavailable(RuntimeError):
    """The index file cannot be read (the API answers 503: a search that silently found nothing would make
    `not search(...)` match everything)."""


@dataclass(frozen=True)
class Doc:
    project: str
    trace_id: str
    span_id: str
    start_time: datetime
    field: str
    text: str


def span_docs(
    project: str, trace_id: str, span_id: str, start_time: datetime, status_message: str | None,
    attributes: object, events: object,
) -> Iterable[Doc]:
    for field, text in content_fields(status_message, attributes, events):
        yield Doc(project, trace_id, span_id, start_time, field, _CONTROL.sub(" ", text))


@dataclass(frozen=True)
class Hit:
    project: str
    trace_id: str
    span_id: str
    start_time: datetime
    field: str
    score: float  # BM25, higher is better
    snippet: str  # with HIT_OPEN/HIT_CLOSE around matches ("" when not asked for)


class SearchIndex:
    """One sidecar file. `writer()` for the writer thread; `search()` from any thread (own connection)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._conn: sqlite3.Connection | None = None

    # ---- writer side ---------------------------------------------------------------------------

    def writer(self) -> sqlite3.Connection:
        if self._conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            for statement in _SCHEMA:
                conn.execute(statement)
            conn.execute("PRAGMA synchronous=NORMAL")  # derived data: a lost tail is re-indexed
            if conn.execute("SELECT 1 FROM meta WHERE key = ?", (META_DOCUMENTS,)).fetchone() is None:
                n = self._recount(conn)
                if n:
                    log.info("search index %s: counted its %d document(s) once (made before the counter)",
                             self.path, n)
            self._conn = conn
        return self._conn

    @staticmethod
    def _recount(conn: sqlite3.Connection) -> int:
        """Set the counter from the documents themselves, in one write transaction (O(documents): only
        at an upgrade or a rebuild, never per request)."""
        conn.execute("BEGIN IMMEDIATE")
        try:
            n = int(conn.execute("SELECT count(*) FROM docs").fetchone()[0])
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (META_DOCUMENTS, str(n)))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return n

    def recount(self) -> int:
        """Count the documents again and keep that as the counter (a rebuild over an existing index)."""
        return self._recount(self.writer())

    @staticmethod
    def _change_count(conn: sqlite3.Connection, delta: int) -> None:
        """Move the counter by `delta` inside the caller's transaction."""
        if delta:
            conn.execute(
                "UPDATE meta SET value = CAST(value AS INTEGER) + ? WHERE key = ?", (delta, META_DOCUMENTS)
            )

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def add(self, docs: Iterable[Doc], meta: dict[str, str] | None = None) -> int:
        """Index `docs` (already indexed ones are skipped) and set `meta`, in one transaction."""
        conn = self.writer()
        added = 0
        conn.execute("BEGIN")
        try:
            for d in docs:
                cur = conn.execute(
                    "INSERT OR IGNORE INTO docs (project, trace_id, span_id, start_us, field) VALUES (?, ?, ?, ?, ?)",
                    (d.project, d.trace_id, d.span_id, to_us(d.start_time), d.field),
                )
                if cur.rowcount:
                    conn.execute("INSERT INTO body (rowid, text) VALUES (?, ?)", (cur.lastrowid, d.text))
                    added += 1
            self._change_count(conn, added)
            for key, value in (meta or {}).items():
                conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return added

    def set_meta(self, values: dict[str, str | None]) -> None:
        conn = self.writer()
        with conn:
            for key, value in values.items():
                if value is None:
                    conn.execute("DELETE FROM meta WHERE key = ?", (key,))
                else:
                    conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def clear(self) -> None:
        conn = self.writer()
        conn.execute("BEGIN")
        try:
            conn.execute("DELETE FROM docs")
            conn.execute("DELETE FROM body")
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (META_DOCUMENTS, "0"))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def prune_before(self, cutoff: datetime) -> int:
        """Drop documents of spans starting before `cutoff` (what retention deleted from the store)."""
        conn = self.writer()
        conn.execute("BEGIN")
        try:
            ids = [r[0] for r in conn.execute("SELECT id FROM docs WHERE start_us < ?", (to_us(cutoff),))]
            conn.executemany("DELETE FROM body WHERE rowid = ?", ((i,) for i in ids))
            removed = conn.execute("DELETE FROM docs WHERE start_us < ?", (to_us(cutoff),)).rowcount
            self._change_count(conn, -removed)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        return removed

    # ---- reader side ---------------------------------------------------------------------------

    def _reader(self) -> sqlite3.Connection | None:
        if not self.path.is_file():
            return None
        try:
            return sqlite3.connect(f"{self.path.as_uri()}?mode=ro", uri=True, check_same_thread=False)
        except sqlite3.Error as exc:
            raise IndexUnavailable(f"search index unreadable: {exc}") from exc

    def meta(self) -> dict[str, str]:
        """The index's bookkeeping ({} when there is no readable index yet)."""
        try:
            conn = self._reader()
        except IndexUnavailable:
            return {}
        if conn is None:
            return {}
        try:
            return dict(conn.execute("SELECT key, value FROM meta").fetchall())
        except sqlite3.Error:
            return {}
        finally:
            conn.close()

    def documents(self) -> int | None:
        """Documents in the index, from its counter (0 when there is no index file yet)."""
        if not self.path.is_file():
            return 0
        return documents_in(self.meta())

    def search(
        self,
        text: str,
        projects: frozenset[str] | None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        snippets: bool = True,
    ) -> list[Hit]:
        """The best-ranked documents matching every word of `text` among readable `projects` (None:
        all; empty: nothing), spans starting in [since, until)."""
        expression = query_expression(text)
        if expression is None or (projects is not None and not projects):
            return []
        conn = self._reader()
        if conn is None:
            return []
        where, params = ["body MATCH ?"], [expression]
        if projects is not None:
            ordered = sorted(projects)
            where.append(f"d.project IN ({', '.join('?' for _ in ordered)})")
            params.extend(ordered)
        if since is not None:
            where.append("d.start_us >= ?")
            params.append(to_us(since))
        if until is not None:
            where.append("d.start_us < ?")
            params.append(to_us(until))
        snippet = (
            f"snippet(body, 0, '{HIT_OPEN}', '{HIT_CLOSE}', '…', {SNIPPET_TOKENS})" if snippets else "''"
        )
        newest = (
            f"SELECT body.rowid FROM body JOIN docs d ON d.id = body.rowid WHERE {' AND '.join(where)} "
            "ORDER BY body.rowid DESC LIMIT 1 OFFSET ?"
        )
        sql = (
            f"SELECT d.project, d.trace_id, d.span_id, d.start_us, d.field, -bm25(body), {snippet} "
            f"FROM body JOIN docs d ON d.id = body.rowid WHERE {' AND '.join(where)} ORDER BY bm25(body) LIMIT ?"
        )
        try:
            # Ranking scores every match: for a word in most documents that is seconds. Only the
            # RANK_WINDOW most recently indexed matches are ranked (walking the match list newest first
            # is cheap); fewer matches are all ranked.
            bound = conn.execute(newest, [*params, max(limit, RANK_WINDOW) - 1]).fetchone()
            if bound is not None:
                sql = sql.replace(" WHERE ", " WHERE body.rowid >= ? AND ", 1)
                rows = conn.execute(sql, [bound[0], *params, limit]).fetchall()
            else:
                rows = conn.execute(sql, [*params, limit]).fetchall()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):  # created, schema not committed yet
                return []
            raise IndexUnavailable(f"search index unreadable: {exc}") from exc
        except sqlite3.Error as exc:
            raise IndexUnavailable(f"search index unreadable: {exc}") from exc
        finally:
            conn.close()
        return [Hit(r[0], r[1], r[2], from_us(r[3]), r[4], float(r[5]), r[6]) for r in rows]


def documents_in(meta: dict[str, str]) -> int | None:
    """The document counter of an index's `meta()`; None when it has none yet (an index made before the
    counter that the writer has not opened, or an unreadable one): unknown, not zero."""
    value = meta.get(META_DOCUMENTS)
    return int(value) if value is not None else None


def segments(snippet: str) -> list[dict[str, object]]:
    """A snippet as [{"text", "match"}] pieces: the client highlights `match` pieces, rendering all as text."""
    out: list[dict[str, object]] = []
    for i, part in enumerate(re.split(f"[{HIT_OPEN}{HIT_CLOSE}]", snippet)):
        if part:
            out.append({"text": part, "match": i % 2 == 1})
    return out
