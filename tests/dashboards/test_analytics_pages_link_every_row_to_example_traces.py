"""Failures, Tools, Cost and Compare draw every documented field of the analytics contract and
link each cluster / tool / cost row to its example traces (Trace page with ?trace_id=)."""

from __future__ import annotations

from tests.dashboards.conftest import open_page, texts
from tests.dashboards.contract_server import EX, contract_server


def _page_links(at) -> list[tuple[str, dict]]:
    out = []
    for el in at.get("page_link"):
        proto = el.proto
        out.append((proto.page, dict(proto.query_string and [kv.split("=", 1) for kv in proto.query_string.split("&")])))
    return out


def test_failure_clusters_show_counts_templates_and_example_links(ui_env) -> None:
    with contract_server() as url:
        ui_env(url)
        at = open_page("failures")
        assert not at.exception
        shown = texts(at)
        assert "Failed runs=7" in shown
        assert "**tool_error_exhausted** · flaky / exception" in shown
        assert "RuntimeError: backend <n> for <q>" in shown
        assert "5 runs (71.4% of failures)" in shown and "versions: 1.0, 2.0" in shown
        linked = [q.get("trace_id") for page, q in _page_links(at) if page.endswith("trace")]
        assert linked == [*EX, EX[1]]  # 3 examples of cluster 1, 1 of cluster 2


def test_tools_table_links_rows_and_shows_three_cost_parts(ui_env) -> None:
    with contract_server() as url:
        ui_env(url)
        at = open_page("tools")
        assert not at.exception
        table = at.dataframe[0].value
        assert list(table["tool"]) == ["search", "add"]
        assert list(table["example"]) == [f"trace?trace_id={EX[0]}", f"trace?trace_id={EX[1]}"]
        row = table.iloc[0]
        assert (row["direct $"], row["decision $"], row["carry $"], row["total $"]) == (0.04, 0.12, 0.31, 0.47)
        assert row["errors by type"] == "denied: 1, timeout: 3"


def test_cost_groups_link_rows_and_export_csv(ui_env) -> None:
    with contract_server() as url:
        ui_env(url)
        at = open_page("cost", {"by": "tool"})
        assert not at.exception
        assert at.query_params["by"] == "tool"
        shown = texts(at)
        assert "Price table as of=2025-02-01" in shown and "Total cost=$0.7500" in shown
        table = at.dataframe[0].value
        assert list(table["tool"]) == ["gpt-4o", "(none)"]
        assert table["example"].iloc[0] == f"trace?trace_id={EX[0]}" and not isinstance(table["example"].iloc[1], str)
        assert [b.label for b in at.get("download_button")] == ["Download CSV", "Download JSON"]


def test_compare_shows_first_divergence_and_deltas(ui_env) -> None:
    with contract_server() as url:
        ui_env(url)
        at = open_page("compare", {"a": EX[0], "b": EX[1]})
        assert not at.exception
        shown = texts(at)
        assert "First divergence at **step 1**, in the **arguments**." in shown
        assert "Steps (B − A)=+1" in shown and "Input tokens (B − A)=+50" in shown
        steps = at.dataframe[0].value
        assert list(steps["step"]) == [1, 2] and list(steps["same"]) == [False, False]
        assert {q.get("trace_id") for _, q in _page_links(at)} == {EX[0], EX[1]}
