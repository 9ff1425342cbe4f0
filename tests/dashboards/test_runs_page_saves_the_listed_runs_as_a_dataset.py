"""The Runs page's "Save as dataset" saves exactly the runs it lists (its filters, status and order)
as eval cases on the server, says how many and which were skipped, and offers the JSONL: AppTest
against the real server with real kernel runs."""

from __future__ import annotations

import json

import httpx

from tests.dashboards.conftest import LoadedServer, open_page, texts


def test_save_as_dataset_keeps_the_listed_runs(loaded_server: LoadedServer, ui_env) -> None:  # type: ignore[no-untyped-def]
    ui_env(loaded_server.url)
    at = open_page("runs", {"status": "ok", "since": "all"})
    assert not at.exception
    at.text_input(key="dataset_name").input("ok-runs")
    at.number_input(key="dataset_size").set_value(5)
    at.run()  # the button is enabled once a name is typed
    at.button(key="dataset_save").click()
    at.run()
    assert not at.exception
    listed = httpx.get(f"{loaded_server.url}/api/runs", params={"ok": "true", "limit": 5}, timeout=30).json()["runs"]
    lines = httpx.get(f"{loaded_server.url}/api/datasets/ok-runs", timeout=30).text.splitlines()
    cases = [json.loads(line) for line in lines]
    saved = httpx.get(f"{loaded_server.url}/api/datasets", timeout=30).json()["datasets"]
    [info] = [d for d in saved if d["name"] == "ok-runs"]
    assert info["cases"] == len(cases) > 0
    assert [c["source"]["trace_id"] for c in cases] == [r["trace_id"] for r in listed][: len(cases)]
    assert f"dataset ok-runs: {len(cases)} cases" in texts(at)
    assert at.get("download_button"), "the JSONL is offered for download"

    at.button(key="dataset_save").click()  # the same name again, without Replace: refused, said so
    at.run()
    assert not at.exception and "not saved" in texts(at)
