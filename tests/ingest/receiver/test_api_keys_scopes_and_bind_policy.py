"""Auth failures: unknown/missing keys, wrong scopes, keys leaking into messages, and an open
server bound beyond loopback without keys."""

from __future__ import annotations

import pytest

from ingest.auth import KeyRing, authorize, check_bind_policy, is_loopback, presented_key
from ingest.config import ApiKey, Settings
from ingest.errors import ConfigError, Forbidden, Unauthenticated

SECRET_A = "sk-test-aaaaaaaaaaaaaaaaaaaa"
SECRET_B = "sk-test-bbbbbbbbbbbbbbbbbbbb"


def _ring() -> KeyRing:
    settings = Settings(
        api_keys=[
            ApiKey(key=SECRET_A, project="alpha", scopes=["ingest"]),
            ApiKey(key_env="TEST_KEY_B", project="beta", scopes=["read"]),
            ApiKey(key="sk-admin-cccccccccccccccc", project="ops", scopes=["admin"]),
            ApiKey(key="sk-oper-dddddddddddddddd", project="ops", scopes=["operator"]),
        ]
    )
    return KeyRing.from_settings(settings, environ={"TEST_KEY_B": SECRET_B})


def test_key_maps_to_its_own_project_and_scopes() -> None:
    ring = _ring()
    a = ring.authenticate(SECRET_A)
    assert (a.project, a.scopes, a.projects) == ("alpha", frozenset({"ingest"}), ("alpha",))
    b = ring.authenticate(SECRET_B)
    assert b.project == "beta"
    assert authorize(b, "read") is b
    admin = ring.authenticate("sk-admin-cccccccccccccccc")
    assert admin.projects == ("ops",) and authorize(admin, "ingest") is admin  # admin stays in its project
    with pytest.raises(Forbidden):
        authorize(admin, "operator")
    operator = ring.authenticate("sk-oper-dddddddddddddddd")
    assert operator.projects is None and authorize(operator, "admin") is operator


@pytest.mark.parametrize("presented", [None, "", "sk-test-aaaaaaaaaaaaaaaaaaaX", SECRET_A[:-1]])
def test_missing_or_unknown_key_is_unauthenticated_and_not_echoed(presented: str | None) -> None:
    with pytest.raises(Unauthenticated) as info:
        _ring().authenticate(presented)
    assert SECRET_A not in info.value.message and (not presented or presented not in info.value.message)


def test_wrong_scope_is_forbidden() -> None:
    ring = _ring()
    with pytest.raises(Forbidden):
        authorize(ring.authenticate(SECRET_A), "read")
    with pytest.raises(Forbidden):
        authorize(ring.authenticate(SECRET_B), "ingest")


def test_without_keys_everyone_is_the_default_project() -> None:
    p = KeyRing.from_settings(Settings(default_project="home")).authenticate(None)
    assert p.project == "home" and p.projects is None


def test_key_env_unset_is_a_config_error_naming_the_variable_not_a_secret() -> None:
    settings = Settings(api_keys=[ApiKey(key_env="NOPE_UNSET_VAR", project="p")])
    with pytest.raises(ConfigError, match="NOPE_UNSET_VAR"):
        KeyRing.from_settings(settings, environ={})
    with pytest.raises(ConfigError):
        KeyRing.from_settings(Settings(api_keys=[ApiKey(project="p")]), environ={})


@pytest.mark.parametrize(
    ("authorization", "x_api_key", "expected"),
    [
        ("Bearer k1", None, "k1"),
        ("bearer   k1 ", None, "k1"),
        ("Basic dXNlcjpwYXNz", "k2", "pass"),  # Basic user:pass presents its password (Langfuse SDK)
        (None, " k2 ", "k2"),
        ("Bearer", None, None),
        (None, None, None),
    ],
)
def test_key_is_read_from_bearer_or_x_api_key(authorization, x_api_key, expected) -> None:
    assert presented_key(authorization, x_api_key) == expected


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com"])
def test_open_server_beyond_loopback_is_refused_with_instructions(host: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_bind_policy(Settings(host=host))
    assert "127.0.0.1" in str(info.value) and "api_keys" in str(info.value)


@pytest.mark.parametrize("host", ["127.0.0.1", "127.0.0.2", "::1", "localhost"])
def test_loopback_without_keys_is_allowed(host: str) -> None:
    assert is_loopback(host)
    check_bind_policy(Settings(host=host))


def test_beyond_loopback_with_keys_is_allowed() -> None:
    check_bind_policy(Settings(host="0.0.0.0", api_keys=[ApiKey(key="k", project="p")]))
