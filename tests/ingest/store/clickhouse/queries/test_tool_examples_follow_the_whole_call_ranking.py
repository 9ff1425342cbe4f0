"""A tool's example traces on ClickHouse are the first distinct traces of ALL its calls ranked
latest failing first, then latest (ties: trace id descending), even though the query keeps only
each tool's best few calls: when one trace's calls crowd those out, the whole ranking is read."""

from __future__ import annotations

from datetime import timedelta

import pytest

from ingest.queries.filters import CommonFilters
from ingest.store.backend import CLICKHOUSE_QUERIES
from ingest.store.clickhouse.queries import tools as ch_tools
from tests.ingest.store.otlp_build import T0, agent_run, request


def _whole_ranking(cur, agent: str) -> list[str]:
    cur.execute("SELECT is_error, start_time, trace_id FROM tool_calls WHERE agent = ?", [agent])
    ranked = sorted(cur.fetchall(), reverse=True)
    return list(dict.fromkeys(trace_id for _, _, trace_id in ranked))[: ch_tools.EXAMPLE_CANDIDATES]


@pytest.fixture
async def store(open_ch_store, tmp_path):
    ch = open_ch_store(db=tmp_path / "ch" / "steplens.duckdb")
    spans = []
    # "crowded": one late run whose failing calls outnumber the calls a tool keeps per pass
    crowded_steps = ch_tools._TOP_CALLS + 12
    root, children = agent_run(start=T0 + timedelta(hours=2), agent="crowded", steps=crowded_steps,
                               tool_error_steps=crowded_steps)
    spans.append([root, *children])
    for i in range(14):
        root, children = agent_run(start=T0 + timedelta(minutes=i), agent="crowded", steps=2,
                                   tool_error_steps=i % 2)
        spans.append([root, *children])
    # "spread": many short runs, none dominating
    for i in range(30):
        root, children = agent_run(start=T0 + timedelta(minutes=3 * i), agent="spread", steps=3,
                                   tool_error_steps=1 if i % 3 == 0 else 0)
        spans.append([root, *children])
    for run in spans:
        await ch.submit("p", request(run))
    assert ch.wait_loaded(60)
    return ch


@pytest.mark.parametrize("agent", ["crowded", "spread"])
def test_examples_equal_the_whole_ranking(store, agent: str) -> None:
    with store.read() as cur:
        want = _whole_ranking(cur, agent)
        rows = CLICKHOUSE_QUERIES.tools.tool_rows(cur, CommonFilters(agent=agent))
        cur.execute("SELECT count() FROM tool_calls WHERE agent = ?", [agent])
        calls = cur.fetchall()[0][0]
    assert calls > ch_tools._TOP_CALLS  # the kept calls are not all of them: the cut is exercised
    assert len(want) == ch_tools.EXAMPLE_CANDIDATES
    (search,) = rows.stats
    assert search["example_candidates"] == want
