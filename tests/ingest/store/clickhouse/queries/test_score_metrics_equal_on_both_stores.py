"""Score metrics (the per-run values regressions and drift compare) are the same on the ClickHouse
store as on DuckDB: the same runs (OTLP/HTTP) and scores (POST /api/scores, one of them replaced by
a later POST of its id) go to a real server on each store, and every score_metrics query answers the
same rows: numeric means, the latest boolean and label, per-bucket sums, the types by majority."""

from __future__ import annotations

from datetime import timedelta

import httpx
import pytest

from ingest.config import Settings
from ingest.queries import score_metrics as duck_metrics
from ingest.queries.filters import CommonFilters
from ingest.store.clickhouse.queries import score_metrics as ch_metrics
from tests.ingest.api.otlp_runs import T0, Emitter, RunSpec
from tests.ingest.conftest import _ServerThread
from tests.support.scores_http import post_scores

FILTERS = CommonFilters(since=T0 - timedelta(days=1), until=T0 + timedelta(days=2))


def _scores(trace_ids: list[str]) -> list[dict]:
    out = []
    for i, trace_id in enumerate(trace_ids):
        out.append({"trace_id": trace_id, "name": "helpfulness", "value": 0.25 * (i % 4), "score_id": f"h{i}"})
        out.append({"trace_id": trace_id, "name": "helpfulness", "value": 1.0, "score_id": f"h{i}b"})  # two: mean
        out.append({"trace_id": trace_id, "name": "correct", "value": i % 3 != 0, "score_id": f"c{i}",
                    "created_at": (T0 + timedelta(minutes=i)).isoformat()})
        out.append({"trace_id": trace_id, "name": "tone", "value": ["calm", "curt", "calm"][i % 3],
                    "score_id": f"t{i}", "created_at": (T0 + timedelta(minutes=i)).isoformat()})
        if i % 2:  # a later label replaces the earlier one by recency
            out.append({"trace_id": trace_id, "name": "tone", "value": "warm", "score_id": f"t{i}z",
                        "created_at": (T0 + timedelta(minutes=i, seconds=30)).isoformat()})
    return out


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    e = Emitter()
    specs = [e.run(RunSpec(start=T0 + timedelta(hours=i), agent=["desk", "triage"][i % 2], version=["1", "2"][i % 2]))
             for i in range(12)]
    scores = _scores([s.trace_id for s in specs])
    payload = e.request().SerializeToString()  # the same spans to both stores
    threads = []
    for backend in ("duckdb", "clickhouse"):
        root = tmp_path_factory.mktemp(backend)
        store = {"store": "clickhouse", "clickhouse_url": f"chdb://{root / 'clickhouse'}"} if backend == "clickhouse" else {}
        thread = _ServerThread(Settings(db=root / "s.duckdb", host="127.0.0.1", grpc_port=0, normalize_processes=0, **store))
        threads.append(thread)
        server = thread.start()
        r = httpx.post(f"{server.http_url}/v1/traces", content=payload,
                       headers={"Content-Type": "application/x-protobuf"}, timeout=30)
        assert r.status_code == 200, r.text
        assert server.store.wait_loaded(30)
        post_scores(server.http_url, scores, server.store)
        post_scores(server.http_url, [{**scores[0], "value": 0.5}], server.store)  # same id: replaces
    yield threads[0].store, threads[1].store
    for thread in reversed(threads):
        thread.stop()


def _both(stores, fn_name: str, *args, **kwargs):
    duck, ch = stores
    with duck.read() as cur:
        expected = getattr(duck_metrics, fn_name)(cur, *args, **kwargs)
    with ch.read() as cur:
        got = getattr(ch_metrics, fn_name)(cur, *args, **kwargs)
    return expected, got


def _rounded(rows):
    return [tuple(round(v, 9) if isinstance(v, float) else v for v in row) for row in rows]


@pytest.mark.parametrize("names", [None, ["helpfulness"], ["tone", "correct"], []])
@pytest.mark.parametrize("versions", [None, ["1"], []])
def test_score_values_equal(stores, names, versions) -> None:
    expected, got = _both(stores, "score_values", FILTERS, versions=versions, names=names)
    assert _rounded(got) == _rounded(expected)
    if names != [] and versions != []:
        assert expected


def test_score_values_of_the_most_recent_runs_only(stores) -> None:
    expected, got = _both(stores, "score_values", FILTERS, limit=5)
    assert _rounded(got) == _rounded(expected)
    assert len({r[0] for r in expected}) == 5


@pytest.mark.parametrize(("name", "data_type", "label"),
                         [("helpfulness", "numeric", None), ("correct", "boolean", None), ("tone", "categorical", "warm")])
def test_score_buckets_equal(stores, name, data_type, label) -> None:
    expected, got = _both(stores, "score_buckets", FILTERS, name, data_type, label, T0 + timedelta(hours=3), 4 * 3600 * 10**6)
    assert _rounded(got) == _rounded(expected)
    assert len({r[1] for r in expected}) >= 2  # several buckets (runs before the origin included)


def test_score_types_equal(stores) -> None:
    expected, got = _both(stores, "score_types", FILTERS, None)
    assert got == expected
    assert expected == {"correct": "boolean", "helpfulness": "numeric", "tone": "categorical"}

