"""Recall must return only the scope's recent, relevant memories, best first, never more than the
cap, from a real SQLite file that outlives the process's store object; the scorer is swappable and
every recall and write is a GenAI memory span."""

from __future__ import annotations

from pathlib import Path

from kernel.memory import LongTermMemory, SQLiteMemoryStore, embedding_scorer, lexical_score
from kernel.tokens import estimate_tokens
from tracer import conventions as c

DAY = 24 * 3600.0


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_memories_survive_reopening_the_file_and_a_key_is_updated_not_duplicated(tmp_path: Path) -> None:
    path = tmp_path / "mem.sqlite"
    clock = Clock()
    first = LongTermMemory(SQLiteMemoryStore(path), clock=clock)
    first.write("bot/alice", "shipping address", "12 Rue de Rivoli, Paris")
    clock.now += 10
    first.write("bot/alice", "shipping address", "3 Baker Street, London")
    first.store.close()

    reopened = SQLiteMemoryStore(path)
    rows = reopened.since("bot/alice", 0)
    assert [(r.key, r.value, r.updated_at) for r in rows] == [("shipping address", "3 Baker Street, London", clock.now)]
    assert reopened.delete("bot/alice", "shipping address") and reopened.since("bot/alice", 0) == []
    reopened.close()


def test_recall_filters_by_scope_recency_and_relevance_and_ranks_best_first(tmp_path: Path) -> None:
    clock = Clock()
    mem = LongTermMemory(SQLiteMemoryStore(tmp_path / "m.sqlite"), max_age_s=30 * DAY, clock=clock)
    mem.write("bot/alice", "old order", "order 77 refund requested")  # will be too old
    clock.now += 40 * DAY
    mem.write("bot/alice", "preferred carrier", "DHL express for every order")
    mem.write("bot/alice", "order 991", "refund approved for order 991")
    mem.write("bot/alice", "favourite colour", "green")  # irrelevant to the query
    mem.write("bot/bob", "order 991", "bob's order refund")  # another user's memory

    got = mem.recall("bot/alice", "status of my refund for order 991")
    assert [m.key for m in got.memories] == ["order 991", "preferred carrier"]
    assert got.candidates == 3 and got.capped == 0
    assert "refund approved for order 991" in got.as_context() and "green" not in got.as_context()
    assert mem.recall("bot/carol", "order 991").memories == []


def test_the_cap_bounds_what_is_injected_and_counts_what_it_left_out(tmp_path: Path) -> None:
    mem = LongTermMemory(SQLiteMemoryStore(tmp_path / "m.sqlite"), max_items=2, max_chars=200)
    for i in range(6):
        mem.write("bot/u", f"invoice {i}", f"invoice {i} was paid late " + "x" * 40)
    got = mem.recall("bot/u", "invoice paid late")
    assert len(got.memories) == 2 and got.capped == 4
    tight = LongTermMemory(mem.store, max_chars=80)
    got = tight.recall("bot/u", "invoice paid late")
    assert len(got.memories) == 1 and got.capped == 5 and len(got.as_context().split("\n", 1)[1]) <= 80


def test_a_token_cap_counts_cjk_memories_by_their_tokens_not_their_characters(tmp_path: Path) -> None:
    mem = LongTermMemory(SQLiteMemoryStore(tmp_path / "m.sqlite"), max_chars=10_000, max_tokens=40)
    mem.write("bot/u", "地址", "东京都新宿区西新宿二丁目八番一号")  # ~20 characters, about as many tokens
    mem.write("bot/u", "电话", "请在工作日上午九点到十二点之间联系")
    got = mem.recall("bot/u", "地址 电话")
    block = got.as_context().split("\n", 1)[1]
    assert len(got.memories) == 1 and got.capped == 1 and len(block) < 40 and estimate_tokens(block) <= 40


def test_an_embedding_scorer_replaces_the_lexical_default(tmp_path: Path) -> None:
    # A toy embedding where "cat" and "kitten" are neighbours although they share no word.
    axes = {"cat": (1.0, 0.0), "kitten": (0.9, 0.1), "invoice": (0.0, 1.0)}

    def embed(text: str) -> tuple[float, float]:
        vecs = [axes[w] for w in text.lower().replace(":", " ").split() if w in axes] or [(0.0, 0.0)]
        return (sum(v[0] for v in vecs), sum(v[1] for v in vecs))

    store = SQLiteMemoryStore(tmp_path / "m.sqlite")
    LongTermMemory(store).write("bot/u", "pet", "kitten")
    LongTermMemory(store).write("bot/u", "billing", "invoice")
    assert LongTermMemory(store).recall("bot/u", "cat").memories == []  # lexical: no shared word
    got = LongTermMemory(store, scorer=embedding_scorer(embed), min_score=0.5).recall("bot/u", "cat")
    assert [m.key for m in got.memories] == ["pet"]
    assert lexical_score("Order 991", "order: 991") == 1.0 and lexical_score("", "x") == 0.0


def test_recall_and_write_are_genai_memory_spans(tmp_path: Path, memory_handle) -> None:
    mem = LongTermMemory(SQLiteMemoryStore(tmp_path / "support.sqlite"), max_items=1)
    mem.write("bot/alice", "plan", "premium plan since 2023")
    mem.write("bot/alice", "plan tier", "premium support plan")
    mem.recall("bot/alice", "which plan am I on")
    spans = memory_handle.memory_exporter.get_finished_spans()
    writes = [s for s in spans if s.name == "upsert_memory support"]
    [search] = [s for s in spans if s.name == "search_memory support"]
    assert len(writes) == 2
    w = dict(writes[0].attributes)
    assert w[c.GEN_AI_OPERATION_NAME] == c.OP_UPSERT_MEMORY and w[c.GEN_AI_MEMORY_ID] == "plan"
    assert w[c.GEN_AI_MEMORY_SCOPE] == "bot/alice" and w[c.GEN_AI_MEMORY_STORE_NAME] == "support"
    a = dict(search.attributes)
    assert a[c.GEN_AI_OPERATION_NAME] == c.OP_SEARCH_MEMORY and a[c.GEN_AI_MEMORY_QUERY] == "which plan am I on"
    assert (a[c.MEMORY_CANDIDATES], a[c.GEN_AI_MEMORY_SEARCH_RESULT_COUNT], a[c.MEMORY_CAPPED]) == (2, 1, 1)
    assert a[c.MEMORY_INJECTED_CHARS] > 0
