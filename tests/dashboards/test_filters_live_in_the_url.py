"""Filters are read from and written to the URL, survive switching pages, and really filter."""

from __future__ import annotations

from tests.dashboards.conftest import LoadedServer, open_page


def test_url_filters_apply_and_are_written_back(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url)
    at = open_page("runs", {"since": "all", "agent": "calc", "sort": "steps", "order": "asc"})
    assert not at.exception
    table = at.dataframe[0].value
    assert set(table["agent"]) == {"calc"} and list(table["steps"]) == sorted(table["steps"])
    qp = at.query_params
    assert (qp["since"], qp["agent"], qp["sort"], qp["order"]) == ("all", "calc", "steps", "asc")


def test_filters_survive_a_page_switch_and_widget_edits_reach_the_url(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url)
    at = open_page("runs", {"since": "all"})
    at.text_input(key="w_agent").input("lister").run()
    assert at.query_params["agent"] == "lister"
    assert set(at.dataframe[0].value["agent"]) == {"lister"}
    at.switch_page("views/overview.py")
    at.query_params.clear()  # what the browser does on a sidebar navigation
    at.run()
    assert not at.exception
    assert at.query_params["agent"] == "lister" and at.query_params["since"] == "all"
    assert {m.label: m.value for m in at.metric}["Runs"] == "1"


def test_runs_filter_expression_lives_in_the_url_and_filters(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url)
    at = open_page("runs", {"since": "all", "filter": 'agent = "calc" and steps >= 1'})
    assert not at.exception
    assert set(at.dataframe[0].value["agent"]) == {"calc"}
    box = next(t for t in at.text_input if t.label == "Filter")
    box.input('agent = "lister"').run()
    assert at.query_params["filter"] == 'agent = "lister"'
    assert set(at.dataframe[0].value["agent"]) == {"lister"}
    box = next(t for t in at.text_input if t.label == "Filter")
    box.input("steps >").run()  # a refused filter is a message naming where, not an exception
    assert not at.exception
    assert any("line 1, column 8" in e.value for e in at.error), ([e.value for e in at.error], [w.value for w in at.warning], [i.value for i in at.info], at.query_params)
