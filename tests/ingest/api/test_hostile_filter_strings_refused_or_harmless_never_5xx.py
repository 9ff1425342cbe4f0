"""Hostile filter expressions and search strings (SQL injection, other projects' names and ids, table
functions, ATTACH/COPY/PRAGMA, huge literals, deep nesting, FTS5 query syntax, lone surrogates) are
refused (400/422) or answered harmlessly: never a 5xx, never a row of another project, and the store
is unchanged afterwards. A project-A key never reads project B through a filter or a search. On both
stores."""

from __future__ import annotations

import pytest

from ingest.config import ApiKey
from tests.ingest.api.content_runs import ContentRun, ToolCall, emit, wait_indexed
from tests.ingest.api.harness import BACKENDS, start_server, stop_server
from tests.ingest.api.otlp_runs import Emitter

KEY_A, KEY_B, KEY_OPS = "hostile-key-a-0123456789", "hostile-key-b-0123456789", "hostile-key-ops-012345678"
B_WORD = "zebrasecret"  # only in project B's content
B_AGENT = "agent_of_b"
WINDOW = {"since": "2000-01-01T00:00:00Z"}


def _hostile(b_trace: str) -> list[str]:
    return [
        "' OR 1=1 --",
        'agent = "x" OR 1=1',
        'agent = "x"; DROP TABLE spans; --',
        'agent = "x\\"; DROP TABLE spans; --"',
        "read_csv('/etc/passwd')",
        'attributes["x\') OR 1=1 --"] exists',
        "ATTACH 'evil.db' AS evil",
        "COPY spans TO '/tmp/steplens-leak.csv'",
        "PRAGMA database_list",
        'project = "B"',
        'span.project = "B"',
        'attributes["project"] = "B"',
        f'trace_id = "{b_trace}"',
        f'agent = "{B_AGENT}"',
        f'search("{B_WORD}")',
        f'search("* OR {B_WORD}")',
        'search("\\" OR 1=1 --")',
        f'search("NEAR({B_WORD} secret)")',
        f'search("project:B {B_WORD}")',
        'agent = "' + "a" * 20_000 + '"',
        "steps > 1" + "0" * 5000,
        "cost_usd > 1e308",
        "(" * 2000 + 'agent = "a"' + ")" * 2000,
        "not " * 900 + 'agent = "a"',
        " and ".join(['agent = "a"'] * 300),
        'attributes["$.a[*]"] exists or attributes["../../etc"] exists',
        'name contains "%" or name contains "_"',
        "agent = 'B' UNION SELECT * FROM spans",
        "getvariable('x') = 1",
        'agent = "\\u0000"',
        'status_message contains "\\ud800"',
        "tool_name in (" + '"a",' * 200 + '"a")',
        'agent = "a" -- comment',
        "1 = 1",
        'attributes["gen_ai.tool.name"] = "refund" and search("\\u0000\\ud83d")',
    ]


@pytest.fixture(scope="module", params=BACKENDS)
def world(request, tmp_path_factory):
    server, stack, thread = start_server(
        tmp_path_factory.mktemp("hostile"),
        [ApiKey(key=KEY_A, project="A"), ApiKey(key=KEY_B, project="B"),
         ApiKey(key=KEY_OPS, project="ops", scopes=["operator"])],
        10.0, request.param,
    )  # fmt: skip
    e = Emitter()
    run_a = emit(e, ContentRun("agent_of_a", "refund the parcel", calls=[ToolCall("refund", {"order": 7})]))
    server.send(e.request(), key=KEY_A)
    run_b = emit(e, ContentRun(B_AGENT, f"refund the parcel {B_WORD}",
                               calls=[ToolCall("refund", {"order": 8}, result=f"refunded {B_WORD}")]))
    server.send(e.request(), key=KEY_B)
    wait_indexed(server, KEY_OPS)
    yield server, run_a, run_b
    stop_server(server, stack, thread)


def _counts(server) -> tuple[int, int]:
    with server.store.read() as cur:
        return tuple(cur.execute("SELECT (SELECT count(*) FROM spans), (SELECT count(*) FROM runs)").fetchall()[0])


def test_hostile_strings_refused_or_harmless(world):
    server, run_a, run_b = world
    before = _counts(server)
    cases = _hostile(run_b.trace_id)
    assert len(cases) >= 30
    for text in cases:
        for path, params in (("/api/runs", {"filter": text}), ("/api/spans", {"filter": text}),
                             ("/api/search", {"q": "refund", "filter": text}), ("/api/search", {"q": text})):
            r = server.get(path, KEY_A, **WINDOW, **params)
            where = f"{path} {params!r:.120}"
            assert r.status_code in (200, 400, 422), f"{where}: {r.status_code} {r.text[:300]}"
            if r.status_code == 200:  # a refusal only quotes the caller's own filter back
                rows = r.json().get("runs") or r.json().get("spans") or r.json().get("results") or []
                assert {row["project"] for row in rows} <= {"A"}, where
                assert not any(m in str(rows) for m in (B_WORD, B_AGENT, run_b.trace_id)), where
    assert _counts(server) == before


def test_project_a_key_never_reads_project_b_through_filter_or_search(world):
    server, run_a, run_b = world

    def runs(key, **params):
        r = server.get("/api/runs", key, **WINDOW, **params)
        assert r.status_code == 200, r.text
        return {x["trace_id"] for x in r.json()["runs"]}

    def found(key, q, **params):
        r = server.get("/api/search", key, q=q, **WINDOW, **params)
        assert r.status_code == 200, r.text
        return {x["trace_id"] for x in r.json()["results"]}

    assert runs(KEY_A, filter='tool_name = "refund"') == {run_a.trace_id}
    assert runs(KEY_B, filter='tool_name = "refund"') == {run_b.trace_id}
    assert runs(KEY_A, filter=f'search("{B_WORD}")') == set()
    assert runs(KEY_B, filter=f'search("{B_WORD}")') == {run_b.trace_id}
    assert runs(KEY_A, filter='search("parcel")') == {run_a.trace_id}
    assert runs(KEY_A, project="B", filter='search("parcel")') == set()
    assert found(KEY_A, "parcel") == {run_a.trace_id}
    assert found(KEY_A, B_WORD) == found(KEY_A, "parcel", project="B") == set()
    assert found(KEY_B, B_WORD) == {run_b.trace_id}
    assert found(KEY_OPS, "parcel") == {run_a.trace_id, run_b.trace_id}
    spans = server.get("/api/spans", KEY_A, filter='search("refund")', **WINDOW).json()["spans"]
    assert spans and {s["project"] for s in spans} == {"A"}
    assert server.get("/api/search/status", KEY_A).json()["documents"] is None  # index-wide size: operator only
    with server.client(KEY_A) as client:
        assert client.post("/api/search/reindex").status_code == 403
