"""Beyond localhost nothing is shown without a login: no login configured means a refusal, a
password means a password form; `steplens ui` refuses to start such a setup at all."""

from __future__ import annotations

from pathlib import Path

from dashboards.launch import login_problem
from tests.dashboards.conftest import LoadedServer, open_page, texts


def test_no_login_configured_refuses_to_show_data(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url, address="0.0.0.0")
    at = open_page("overview", {"since": "all"})
    assert not at.exception
    assert "no login is configured" in texts(at)
    assert not at.metric  # no data leaked


def test_password_gate(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url, password="s3cret-pass", address="0.0.0.0")
    at = open_page("overview", {"since": "all"})
    assert not at.metric and at.text_input[0].label == "Password"
    at.text_input[0].input("wrong")
    at.button[0].click().run()
    assert "Wrong password." in texts(at) and not at.metric
    at.text_input[0].input("s3cret-pass")
    at.button[0].click().run()
    assert not at.exception
    assert {m.label: m.value for m in at.metric}["Runs"] == "5"


def test_localhost_needs_no_login(loaded_server: LoadedServer, ui_env) -> None:
    ui_env(loaded_server.url, password="s3cret-pass", address="127.0.0.1")
    at = open_page("overview", {"since": "all"})
    assert {m.label: m.value for m in at.metric}["Runs"] == "5"


def test_launcher_refuses_public_address_without_login(tmp_path: Path) -> None:
    assert login_problem("127.0.0.1", {}, tmp_path) is None
    assert "refusing" in (login_problem("0.0.0.0", {}, tmp_path) or "")
    assert login_problem("0.0.0.0", {"STEPLENS_UI_PASSWORD": "x"}, tmp_path) is None
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text('[auth]\nredirect_uri = "http://h/oauth2callback"\n')
    assert login_problem("0.0.0.0", {}, tmp_path) is None
