"""The SQL page, run by Streamlit's AppTest against the real ingest server loaded with real kernel
runs: the query in the URL is answered as a table with exactly the stored runs' numbers and drawn
by the chart builder; the page opens on the server's first example; a refused query is the
server's message, never an exception.

The failure this covers: the SQL page is the one place users type SQL; a refusal or an empty answer
must read as a message, and the table must be the answer the API gave.
"""

from __future__ import annotations

import httpx

from tests.dashboards.conftest import LoadedServer, open_page, texts

QUERY = "SELECT agent, count(*) AS runs, sum(steps) AS steps FROM runs GROUP BY agent ORDER BY agent"


def test_the_query_in_the_url_is_answered_as_a_table_and_a_chart(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url)
    expected = httpx.post(f"{loaded_server.url}/api/sql", json={"sql": QUERY}, timeout=30).json()["rows"]
    listed = httpx.get(f"{loaded_server.url}/api/runs", params={"limit": 100}, timeout=30).json()["runs"]
    per_agent: dict[str, int] = {}
    for run in listed:
        per_agent[run["agent"]] = per_agent.get(run["agent"], 0) + 1
    assert {a: n for a, n, _ in expected} == per_agent  # the SQL view counts what /api/runs lists
    at = open_page("sql", {"q": QUERY, "x": "agent", "y": "runs"})
    assert not at.exception
    table = at.dataframe[-1].value
    assert list(table["agent"]) == [r[0] for r in expected]
    assert list(table["runs"]) == [r[1] for r in expected] and list(table["steps"]) == [r[2] for r in expected]
    assert {m.label: m.value for m in at.metric}["Rows"] == str(len(expected))
    assert len(at.get("plotly_chart")) == 1


def test_the_page_opens_on_the_first_example_and_refusals_are_messages(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url)
    catalog = httpx.get(f"{loaded_server.url}/api/sql/views", timeout=30).json()
    at = open_page("sql")
    assert not at.exception
    assert at.text_area[0].value == catalog["examples"][0]["sql"]
    assert int({m.label: m.value for m in at.metric}["Rows"].replace(",", "")) > 0
    at = open_page("sql", {"q": "SELECT * FROM alert_state"})
    assert not at.exception
    assert "unknown table 'alert_state'" in texts(at)
