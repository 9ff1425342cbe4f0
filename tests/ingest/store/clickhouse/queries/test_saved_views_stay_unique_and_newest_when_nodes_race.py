"""Saved views on ClickHouse, where several api nodes write one table with no writer thread between
them: a name stays unique in its project when another node saves it in the middle of a create or a
rename, the newest write wins even when this node's clock is behind the one that wrote before it,
and a deleted view is gone from every read.

The other node is real SQL on the same chDB store, run at the exact moment between this node's
check and its write (the cursor hands control to it just before this node's INSERT)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from typing import Any

import pytest

from ingest.clock import utcnow
from ingest.queries.views import NameTaken, ViewSpec
from ingest.store.clickhouse.queries import views


class _OtherNodeFirst:
    """A cursor whose first INSERT is preceded by `other(cursor)`: another node's write landing
    between this node's name check and its own write."""

    def __init__(self, cur: Any, other: Any) -> None:
        self._cur, self._other = cur, other

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cur, name)

    def command(self, sql: str, params: Any = None) -> None:
        if self._other is not None:
            other, self._other = self._other, None
            other(self._cur)
        self._cur.command(sql, params)


@pytest.fixture
def store(open_ch_store: Any) -> Any:
    return open_ch_store()


def test_a_name_saved_by_another_node_mid_create_is_refused(store: Any) -> None:
    with store.read() as cur:
        racing = _OtherNodeFirst(cur, lambda c: views.insert_view(c, "A", ViewSpec("refunds", "runs"), "other"))
        with pytest.raises(NameTaken):
            views.insert_view(racing, "A", ViewSpec("refunds", "sessions"), "me")
        listed = views.list_views(cur, frozenset({"A"}), None)
        assert [(v.name, v.page, v.created_by) for v in listed] == [("refunds", "runs", "other")]
        # another project may hold the same name
        assert views.insert_view(cur, "B", ViewSpec("refunds", "runs"), "b").project == "B"


def test_a_rename_onto_a_name_another_node_just_saved_is_undone(store: Any) -> None:
    with store.read() as cur:
        mine = views.insert_view(cur, "A", ViewSpec("failures", "runs", filter="ok = false"), "me")
        racing = _OtherNodeFirst(cur, lambda c: views.insert_view(c, "A", ViewSpec("slow", "graph"), "other"))
        with pytest.raises(NameTaken):
            views.update_view(racing, mine.view_id, frozenset({"A"}), ViewSpec("slow", "runs"))
        kept = views.get_view(cur, mine.view_id, None)
        assert kept is not None and (kept.name, kept.filter) == ("failures", "ok = false")
        assert sorted(v.name for v in views.list_views(cur, None, None)) == ["failures", "slow"]


def test_the_newest_write_wins_when_this_nodes_clock_is_behind(store: Any) -> None:
    with store.read() as cur:
        made = views.insert_view(cur, "A", ViewSpec("v", "runs"), "me")
        ahead = replace(made, filter="from a node an hour ahead", updated_at=utcnow() + timedelta(hours=1))
        views._write(cur, ahead)
        got = views.update_view(cur, made.view_id, None, ViewSpec("v", "runs", filter="mine", params={"agent": "x"}))
        assert got is not None and (got.filter, got.params) == ("mine", {"agent": "x"})
        assert got.updated_at > ahead.updated_at and got.created_at == made.created_at
        assert views.delete_view(cur, made.view_id, None)
        assert views.get_view(cur, made.view_id, None) is None
        assert views.list_views(cur, None, None) == []
        assert not views.delete_view(cur, made.view_id, None)
        assert views.update_view(cur, made.view_id, None, ViewSpec("v", "runs")) is None
        # the name is free again once the view is deleted
        assert views.insert_view(cur, "A", ViewSpec("v", "runs"), "me").name == "v"
