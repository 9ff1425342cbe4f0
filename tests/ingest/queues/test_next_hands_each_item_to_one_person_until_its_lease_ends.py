"""`next` hands an item to one person at a time: two people asking get different runs, a third gets
nothing while both are held, another person's held item cannot be submitted (409), and once the
lease ends the item goes to whoever asks next; twelve people asking at once for six runs get six
different runs and six nothings."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.ingest.api.harness import BACKENDS
from tests.ingest.api.otlp_runs import Emitter
from tests.ingest.queues.harness import Api, emit_runs, settle


@pytest.mark.parametrize("backend", BACKENDS)
def test_held_items_go_to_nobody_else_until_the_lease_ends(queue_server) -> None:
    srv = queue_server()
    api = Api(srv.http_url)
    api.create("one-each", lease_s=2)
    emitter = Emitter()
    emit_runs(emitter, 2)
    api.send(emitter)
    assert settle(api, "one-each", srv.store) == 2

    a = api.ok("GET", "/api/queues/one-each/next", params={"user": "alice"})
    b = api.ok("GET", "/api/queues/one-each/next", params={"user": "bob"})
    assert a["item"]["trace_id"] != b["item"]["trace_id"]
    assert a["item"]["held_by"] == ["alice"] and b["item"]["held_by"] == ["bob"]
    held = api.ok("GET", "/api/queues/one-each/next", params={"user": "carol"})
    assert held["item"] is None and held["progress"]["in_progress"] == 2

    taken = api.call("POST", f"/api/queues/one-each/items/{a['item']['trace_id']}/submit",
                     json={"user": "carol", "scores": {"correct": True}})
    assert taken.status_code == 409 and "alice" in taken.text
    unknown = api.call("POST", f"/api/queues/one-each/items/{'0' * 32}/submit",
                       json={"user": "carol", "scores": {"correct": True}})
    assert unknown.status_code == 404

    time.sleep(2.2)
    freed = api.ok("GET", "/api/queues/one-each/next", params={"user": "carol"})
    assert freed["item"]["trace_id"] == a["item"]["trace_id"], "the oldest freed item goes first"
    done = api.ok("POST", f"/api/queues/one-each/items/{a['item']['trace_id']}/submit",
                  json={"user": "carol", "scores": {"correct": True}})
    assert done["status"] == "done" and [d["user"] for d in done["decisions"]] == ["carol"]
    late = api.call("POST", f"/api/queues/one-each/items/{a['item']['trace_id']}/submit",
                    json={"user": "alice", "scores": {"correct": False}})
    assert late.status_code == 409 and "done" in late.text


@pytest.mark.parametrize("backend", BACKENDS)
def test_people_asking_at_once_never_get_the_same_run(queue_server) -> None:
    srv = queue_server()
    api = Api(srv.http_url)
    api.create("rush")
    emitter = Emitter()
    emit_runs(emitter, 6)
    api.send(emitter)
    assert settle(api, "rush", srv.store) == 6

    def ask(i: int) -> str | None:
        item = api.ok("GET", "/api/queues/rush/next", params={"user": f"person{i}"})["item"]
        return None if item is None else item["trace_id"]

    with ThreadPoolExecutor(12) as pool:
        got = list(pool.map(ask, range(12)))
    held = [t for t in got if t is not None]
    assert len(held) == 6 and len(set(held)) == 6, got
    assert got.count(None) == 6
