"""A new install alerted on nothing until the user wrote TOML. The server now starts with the
built-in rule set when no `[[alerts]]` are configured, shown as built-in in GET /api/alerts; any
configured rule replaces the whole set, `alerts_defaults = false` turns it off, and with API keys
each project gets (and sees, and checks) its own set."""

from __future__ import annotations

from pathlib import Path

import httpx

from ingest.alerts.rules import AlertRule, RuleKind
from ingest.config import ApiKey, load_settings

BUILTIN_KINDS = {("release", "steps"), ("drift", "steps"), ("window", "failure_rate"), ("window", "cost_usd"),
                 ("release", "score:*"), ("release", "handoff_rate")}
N = len(BUILTIN_KINDS)


def _rules(url: str, key: str | None = None) -> list[dict]:
    headers = {"x-api-key": key} if key else {}
    return httpx.get(f"{url}/api/alerts", headers=headers, timeout=30).raise_for_status().json()["rules"]


def test_no_rules_configured_gives_the_builtin_set_to_the_log(server_on) -> None:  # type: ignore[no-untyped-def]
    srv = server_on()
    rules = _rules(srv.http_url)
    assert {(r["rule"]["kind"], r["rule"]["metric"]) for r in rules} == BUILTIN_KINDS
    assert all(r["builtin"] for r in rules)
    assert all(r["rule"]["agent"] is None and r["rule"]["channels"] == ["log"] for r in rules)
    window = [r["rule"] for r in rules if r["rule"]["kind"] == "window"]
    assert all(w["window"] == 24 * 3600 and w["baseline"] == 7 * 24 * 3600 for w in window)
    # evaluated like any rule: an empty store fires nothing and fails nothing
    check = httpx.post(f"{srv.http_url}/api/alerts/check", timeout=60).raise_for_status().json()
    assert check["evaluated"] == N and check["errors"] == {} and check["firing"] == []


def test_any_configured_rule_replaces_the_builtin_set(server_on) -> None:  # type: ignore[no-untyped-def]
    mine = AlertRule(name="mine", kind=RuleKind.THRESHOLD, metric="cost_usd", threshold=1.0)
    srv = server_on(alerts=[mine])
    rules = _rules(srv.http_url)
    assert [(r["rule"]["name"], r["builtin"]) for r in rules] == [("mine", False)]


def test_alerts_defaults_false_turns_them_off(server_on, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    toml = tmp_path / "steplens.toml"
    toml.write_text("alerts_defaults = false\n")
    assert load_settings(toml).alerts_defaults is False
    srv = server_on(alerts_defaults=False)
    assert _rules(srv.http_url) == []


def test_with_keys_each_project_gets_its_own_builtin_set(server_on) -> None:  # type: ignore[no-untyped-def]
    keys = [ApiKey(key="key-of-a-0123456789", project="a", scopes=["ingest", "read", "admin"]),
            ApiKey(key="key-of-b-0123456789", project="b", scopes=["ingest", "read", "admin"]),
            ApiKey(key="operator-0123456789", project="ops", scopes=["operator"])]
    srv = server_on(api_keys=keys)
    mine = _rules(srv.http_url, "key-of-a-0123456789")
    assert len(mine) == N and {r["rule"]["project"] for r in mine} == {"a"} and all(r["builtin"] for r in mine)
    everything = _rules(srv.http_url, "operator-0123456789")
    assert {r["rule"]["project"] for r in everything} == {"a", "b", "ops"} and len(everything) == 3 * N
    check = httpx.post(f"{srv.http_url}/api/alerts/check", headers={"x-api-key": "key-of-b-0123456789"},
                       timeout=60).raise_for_status().json()
    assert check["evaluated"] == N and check["errors"] == {}
