"""docker-compose.yml, deploy/otel-collector.yaml and the Dockerfile must use the commands, flags, ports
and variables the code actually reads. No container runtime exists in CI, so each file is parsed and
checked against the real objects: the typer app's click commands, ingest's Settings and key ring,
the dashboards' settings and login rule. A renamed flag or setting fails here, not at 3 a.m."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from setuptools import find_packages

from dashboards.config import UISettings
from dashboards.launch import login_problem
from ingest.auth import OPEN_PATHS, KeyRing, check_bind_policy, presented_key
from ingest.config import Settings, load_settings
from ingest.server import OTLP_LOGS_PATHS, OTLP_TRACES_PATHS
from tests.support.compose import MissingVariable, container_ports, interpolate, parse, variables

REPO = Path(__file__).resolve().parents[2]
SECRETS = {  # what a team puts in .env; the values only need to be distinct
    "STEPLENS_INGEST_KEY": "ingest-secret-1", "STEPLENS_READ_KEY": "read-secret-2",
    "STEPLENS_ADMIN_KEY": "admin-secret-3", "STEPLENS_UI_PASSWORD": "ui-secret-4",
    "STEPLENS_AGENT_TOKEN": "agent-secret-5",
}


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


@pytest.fixture(scope="module")
def compose(raw: dict) -> dict:
    return interpolate(raw, SECRETS)


@pytest.fixture(scope="module")
def collector_config() -> dict:
    return yaml.safe_load((REPO / "deploy" / "otel-collector.yaml").read_text())


def env_names(service: dict) -> set[str]:
    return {k for k in service.get("environment", {}) if k.startswith("STEPLENS_")}


def test_services_and_volumes(compose: dict) -> None:
    assert {"ingest", "dashboards", "collector"} <= set(compose["services"])
    assert "steplens-data" in compose["volumes"] and "collector-queue" in compose["volumes"]


def test_secrets_have_no_default_and_compose_refuses_without_them(raw: dict) -> None:
    text = (REPO / "docker-compose.yml").read_text()
    required = {m["name"] for m in variables(text) if m["op"] == ":?"}
    assert required == set(SECRETS)
    defaulted = {m["name"] for m in variables(text) if m["op"] == ":-"}
    assert not {n for n in defaulted if re.search("KEY|TOKEN|PASSWORD|SECRET", n)}, defaulted
    for missing in SECRETS:
        with pytest.raises(MissingVariable, match=missing):
            interpolate(raw, {k: v for k, v in SECRETS.items() if k != missing})


def _ingest_settings(compose: dict, monkeypatch: pytest.MonkeyPatch) -> tuple[Settings, dict, dict[str, str]]:
    service = compose["services"]["ingest"]
    _, params = parse(service["command"])
    env = {k: str(v) for k, v in service["environment"].items()}
    for name in [n for n in __import__("os").environ if n.startswith("STEPLENS_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(**{k: v for k, v in params.items() if k in Settings.model_fields})
    return settings, params, env


def test_ingest_command_env_and_ports_are_what_serve_reads(compose: dict, monkeypatch) -> None:
    service = compose["services"]["ingest"]
    settings, params, env = _ingest_settings(compose, monkeypatch)
    assert service["command"][0] == "serve" and params["host"] == "0.0.0.0"

    key_envs = {k.key_env for k in settings.api_keys}
    fields = {f"STEPLENS_{name.upper()}" for name in Settings.model_fields}
    assert env_names(service) - fields == key_envs, "every STEPLENS_* variable is a setting or a key's key_env"
    assert settings.retention_days == int(env["STEPLENS_RETENTION_DAYS"])

    # Listening beyond loopback is allowed only because the keys resolve.
    check_bind_policy(settings)
    ring = KeyRing.from_settings(settings, environ=env)
    scopes = {name: ring.authenticate(SECRETS[name]).scopes for name in key_envs}
    assert scopes == {"STEPLENS_INGEST_KEY": {"ingest"}, "STEPLENS_READ_KEY": {"read"},
                      "STEPLENS_ADMIN_KEY": {"operator"}}

    default_port = Settings.model_fields["port"].default
    assert settings.port == default_port and container_ports(service) == {default_port}
    assert settings.grpc_port == 0  # the Collector terminates gRPC

    mounts = {v.split(":")[1] for v in service["volumes"]}
    assert str(settings.db.parent) in mounts and service["volumes"][0].split(":")[0] in compose["volumes"]
    health = " ".join(service["healthcheck"]["test"])
    assert f"127.0.0.1:{settings.port}/healthz" in health and "/healthz" in OPEN_PATHS


def test_dashboards_command_env_and_login_are_what_ui_reads(compose: dict, monkeypatch) -> None:
    service = compose["services"]["dashboards"]
    _, params = parse(service["command"])
    ingest = compose["services"]["ingest"]
    _, ingest_params = parse(ingest["command"])
    api = urlparse(params["api"])
    assert (api.hostname, api.port) == ("ingest", ingest_params["port"])
    assert container_ports(service) == {params["port"]}
    assert params["port"] == next(p for p in parse(["ui"])[1].items() if p[0] == "port")[1]  # the ui default

    env = {k: str(v) for k, v in service["environment"].items()}
    assert env_names(service) <= {f"STEPLENS_{n.upper()}" for n in UISettings.model_fields}
    assert login_problem(params["address"], environ=env, cwd=REPO / "nonexistent") is None
    assert login_problem(params["address"], environ={}, cwd=REPO / "nonexistent") is not None
    # The dashboards' key is the read key the server knows, and may read.
    settings, _, ingest_env = _ingest_settings(compose, monkeypatch)
    principal = KeyRing.from_settings(settings, environ=ingest_env).authenticate(env["STEPLENS_API_KEY"])
    assert principal.scopes == {"read"}
    assert service["depends_on"]["ingest"]["condition"] == "service_healthy"
    assert f":{params['port']}/_stcore/health" in " ".join(service["healthcheck"]["test"])


def test_collector_forwards_to_ingest_with_an_ingest_key_retries_and_a_disk_queue(
    compose: dict, collector_config: dict, monkeypatch
) -> None:
    service = compose["services"]["collector"]
    config_path = next(a.split("=", 1)[1] for a in service["command"] if a.startswith("--config="))
    mounted = {v.split(":")[1]: v.split(":")[0] for v in service["volumes"]}
    assert (REPO / mounted[config_path]).resolve() == REPO / "deploy" / "otel-collector.yaml"

    pipeline = collector_config["service"]["pipelines"]["traces"]
    (exporter_name,) = pipeline["exporters"]
    exporter = collector_config["exporters"][exporter_name]
    assert exporter_name.split("/")[0] == "otlphttp"
    endpoint = urlparse(exporter["traces_endpoint"])
    _, ingest_params = parse(compose["services"]["ingest"]["command"])
    assert (endpoint.hostname, endpoint.port, endpoint.path) == ("ingest", ingest_params["port"], OTLP_TRACES_PATHS[0])
    # log records (GenAI events) go the same way, through the same exporter and queue
    assert collector_config["service"]["pipelines"]["logs"]["exporters"] == [exporter_name]
    logs_endpoint = urlparse(exporter["logs_endpoint"])
    assert (logs_endpoint.hostname, logs_endpoint.port, logs_endpoint.path) == (
        "ingest", ingest_params["port"], OTLP_LOGS_PATHS[0]
    )

    # ${env:X} in the collector config is resolved from the collector's environment.
    collector_env = {k: str(v) for k, v in service["environment"].items()}
    used = set(re.findall(r"\$\{env:([A-Za-z0-9_]+)\}", (REPO / "deploy" / "otel-collector.yaml").read_text()))
    assert used <= set(collector_env)
    headers = {k.lower(): re.sub(r"\$\{env:(\w+)\}", lambda m: collector_env[m[1]], v)
               for k, v in exporter["headers"].items()}
    settings, _, ingest_env = _ingest_settings(compose, monkeypatch)
    key = presented_key(headers.get("authorization"), headers.get("x-api-key"))
    assert KeyRing.from_settings(settings, environ=ingest_env).authenticate(key).scopes == {"ingest"}

    assert exporter["retry_on_failure"]["enabled"] is True
    queue = exporter["sending_queue"]
    assert queue["enabled"] is True
    storage = queue["storage"]
    assert storage.split("/")[0] == "file_storage" and storage in collector_config["service"]["extensions"]
    queue_dir = collector_config["extensions"][storage]["directory"]
    volume = next(src for src, dst in ((v.split(":")[0], v.split(":")[1]) for v in service["volumes"]) if dst == queue_dir)
    assert volume in compose["volumes"], "the queue must live on a named volume to survive a restart"
    init = compose["services"][next(iter(service["depends_on"]))]
    assert f"{volume}:{queue_dir}" in init["volumes"] and "10001" in " ".join(init["command"])

    receivers = collector_config["receivers"]["otlp"]["protocols"]
    listening = {int(p["endpoint"].rsplit(":", 1)[1]) for p in receivers.values()}
    assert listening == container_ports(service) == {4317, 4318}
    for protocol in receivers.values():
        assert protocol["auth"]["authenticator"] in collector_config["service"]["extensions"]


def _dockerfile() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    return [tuple(line.split(None, 1)) for line in text.splitlines() if line.strip() and not line.startswith("#")]


def test_dockerfile_runs_steplens_serve_as_a_non_root_user() -> None:
    import json

    steps = _dockerfile()
    assert steps[0] == ("FROM", "python:3.11-slim")
    users = [arg for op, arg in steps if op == "USER"]
    assert users and users[-1] not in ("root", "0")
    entry = json.loads(next(arg for op, arg in steps if op == "ENTRYPOINT"))
    cmd = json.loads(next(arg for op, arg in steps if op == "CMD"))
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert entry == ["steplens"] and "steplens" in scripts
    assert parse(cmd)[1]["host"] == "0.0.0.0"
    exposed = {int(p) for op, arg in steps if op == "EXPOSE" for p in arg.split()}
    ui_default = parse(["ui"])[1]["port"]
    assert {Settings.model_fields["port"].default, Settings.model_fields["grpc_port"].default, ui_default} == exposed
    env = " ".join(arg for op, arg in steps if op == "ENV")
    assert "STEPLENS_DB=/data/" in env and "/data" in next(arg for op, arg in steps if op == "VOLUME")


def test_dockerignore_keeps_secrets_and_local_data_out_of_the_image() -> None:
    ignored = set((REPO / ".dockerignore").read_text().split())
    assert {".env", ".venv", "data", ".git", ".streamlit/secrets.toml"} <= ignored
    copied = {arg.split()[0].rstrip("/") for op, arg in _dockerfile() if op == "COPY"}
    assert not copied & ignored


def test_pip_install_ships_every_file_of_the_packages() -> None:
    """The image runs `pip install .`, not the checkout: a folder without __init__.py (Streamlit's page
    scripts) or a data file outside package-data would silently vanish from it."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    packages = set(find_packages(str(REPO), include=config["packages"]["find"]["include"]))
    data = config.get("package-data", {})
    missing = []
    for top in ("kernel", "tracer", "ingest", "dashboards", "steplens"):
        for path in (REPO / top).rglob("*"):
            if path.is_dir() or "__pycache__" in path.parts or path.suffix == ".pyc":
                continue
            package = ".".join(path.parent.relative_to(REPO).parts)
            if path.suffix == ".py" and package in packages:
                continue
            owners = [p for p in packages if package == p or package.startswith(p + ".")]
            shipped = any(
                path.relative_to(REPO / Path(*owner.split("."))).match(pattern)
                for owner in owners for key in ("*", owner) for pattern in data.get(key, [])
            )
            if not shipped:
                missing.append(str(path.relative_to(REPO)))
    assert not missing, f"not shipped by `pip install .`: {missing}"
