"""Every page, run by Streamlit's AppTest against the real ingest server loaded with real kernel
runs, renders without an exception and shows the facts of those runs."""

from __future__ import annotations

from kernel.truncation import truncate_observation
from tests.dashboards.conftest import LoadedServer, open_page, shown, texts
from tests.dashboards.workload import dump_listing

ANALYTICS_MISSING = "needs a steplens server version with /api/"


def test_overview_counts_the_runs_sent(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url)
    at = open_page("overview", {"since": "all"})
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Runs"] == "5"  # 4 agent runs + the wide trace
    assert metrics["Success rate"] == "80.0%"
    failed = at.dataframe[0].value
    assert list(failed["trace"]) == [f"trace?trace_id={loaded_server.runs.failed}"]


def test_runs_page_lists_runs_with_links_to_their_traces(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url)
    at = open_page("runs", {"since": "all"})
    assert not at.exception
    table = at.dataframe[0].value
    assert set(table["trace"]) == {f"trace?trace_id={t}" for t in [*loaded_server.runs.all, loaded_server.wide_trace]}
    at = open_page("runs", {"since": "all", "status": "failed"})
    assert list(at.dataframe[0].value["stop reason"]) == ["tool_error_exhausted"]


def test_trace_page_shows_steps_truncation_and_llm_messages(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url)
    at = open_page("trace", {"trace_id": loaded_server.runs.truncated})
    assert not at.exception
    shown = texts(at)
    assert "invoke_agent lister" in shown
    dropped = truncate_observation(dump_listing(400), 60).dropped_tokens  # what the kernel cut from `dump`
    assert f"Observation truncated ({dropped} tokens dropped)" in shown
    assert "[... " in shown and "tokens truncated ...]" in shown  # the mark itself is visible
    assert any(e.label.startswith("✂️ Step 1 · tool · dump") for e in at.expander)
    assert '"role": "system"' in shown  # LLM input messages
    assert "decision **executed**" in shown


def test_trace_page_highlights_errors_of_a_failed_run(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url)
    at = open_page("trace", {"trace_id": loaded_server.runs.failed})
    assert not at.exception
    errors = "\n".join(shown(e.value) for e in at.error)
    assert "failed · stop reason: tool_error_exhausted" in errors
    assert "backend 500 for a" in errors and "step 1" in errors
    assert all(e.label.startswith("❌") for e in at.expander if "Step" in e.label)


def test_trace_page_unknown_id_and_bad_id_are_messages(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url)
    at = open_page("trace", {"trace_id": "f" * 32})
    assert not at.exception and "not found" in texts(at)
    at = open_page("trace", {"trace_id": "../runs"})
    assert not at.exception and "32 hexadecimal characters" in texts(at)
    at = open_page("trace")
    assert "Open a trace from the Runs" in texts(at)


def test_analytics_pages_render_the_servers_analytics(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url)
    for page, query in (("failures", {"since": "all"}), ("tools", {"since": "all"}), ("cost", {"since": "all"}),
                        ("compare", {"a": loaded_server.runs.ok_v1, "b": loaded_server.runs.ok_v2})):
        at = open_page(page, query)
        assert not at.exception, page
        shown = texts(at)
        assert ANALYTICS_MISSING not in shown, page
        assert not at.error, (page, [e.value for e in at.error])
        if page == "failures":
            assert "**tool_error_exhausted** · flaky / exception" in shown
        elif page == "tools":
            assert {"add", "dump", "flaky"} <= set(at.dataframe[0].value["tool"])
        elif page == "cost":
            assert "Total cost" in shown
        else:
            assert "First divergence at **step 1**, in the **arguments**." in shown
