"""docker-compose.clickhouse.yml and deploy/otel-collector-clickhouse.yaml must describe a deployment the
code can run: one ClickHouse, two ingest nodes behind the Collector's trace-id balancer, one api
node the dashboards read, exactly one worker. Each file is parsed and checked against the real
objects (the typer commands, Settings, the node roles, the key ring); `docker compose config` runs
too when this machine has docker compose."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml

from ingest.auth import KeyRing, check_bind_policy, presented_key
from ingest.config import Settings, load_settings
from ingest.roles import check_role_store, plan_for
from tests.support.compose import MissingVariable, container_ports, interpolate, parse, variables

REPO = Path(__file__).resolve().parents[2]
COMPOSE = REPO / "docker-compose.clickhouse.yml"
COLLECTOR = REPO / "deploy" / "otel-collector-clickhouse.yaml"
SECRETS = {
    "STEPLENS_INGEST_KEY": "ingest-secret-1", "STEPLENS_READ_KEY": "read-secret-2",
    "STEPLENS_ADMIN_KEY": "admin-secret-3", "STEPLENS_UI_PASSWORD": "ui-secret-4",
    "STEPLENS_AGENT_TOKEN": "agent-secret-5", "STEPLENS_CLICKHOUSE_PASSWORD": "clickhouse-secret-6",
}


@pytest.fixture(scope="module")
def raw() -> dict:
    return yaml.safe_load(COMPOSE.read_text())


@pytest.fixture(scope="module")
def compose(raw: dict) -> dict:
    return interpolate(raw, SECRETS)


@pytest.fixture(scope="module")
def collector_config() -> dict:
    return yaml.safe_load(COLLECTOR.read_text())


def steplens_nodes(compose: dict) -> dict[str, dict]:
    """The services that run `steplens serve`, by name."""
    return {name: s for name, s in compose["services"].items() if s.get("command", [None])[0] == "serve"}


def node_settings(service: dict, monkeypatch: pytest.MonkeyPatch) -> tuple[Settings, dict[str, str]]:
    """The Settings `steplens serve` would build inside this container (its flags + its environment)."""
    _, params = parse(service["command"])
    env = {k: str(v) for k, v in service["environment"].items()}
    for name in [n for n in __import__("os").environ if n.startswith("STEPLENS_")]:
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = load_settings(**{k: v for k, v in params.items() if k in Settings.model_fields})
    return settings, env


def test_one_clickhouse_two_ingest_one_api_one_worker(compose: dict, monkeypatch) -> None:
    roles: dict[str, list[str]] = {}
    for name, service in steplens_nodes(compose).items():
        settings, _ = node_settings(service, monkeypatch)
        roles.setdefault(settings.role, []).append(name)
    assert {role: len(names) for role, names in roles.items()} == {"ingest": 2, "api": 1, "worker": 1}, roles
    for service in steplens_nodes(compose).values():
        assert "deploy" not in service or service["deploy"].get("replicas", 1) == 1  # the worker must stay one


def test_clickhouse_is_the_official_image_with_a_volume_and_a_healthcheck(compose: dict) -> None:
    ch = compose["services"]["clickhouse"]
    image, _, tag = ch["image"].partition(":")
    assert image == "clickhouse/clickhouse-server" and tag and tag != "latest"
    (volume,) = [v for v in ch["volumes"] if v.endswith(":/var/lib/clickhouse")]
    assert volume.split(":")[0] in compose["volumes"]
    assert "8123/ping" in " ".join(ch["healthcheck"]["test"])
    for service in steplens_nodes(compose).values():
        assert service["depends_on"]["clickhouse"]["condition"] == "service_healthy"


def test_every_node_runs_its_role_on_that_clickhouse_with_its_credentials(compose: dict, monkeypatch) -> None:
    ch_env = compose["services"]["clickhouse"]["environment"]
    for name, service in steplens_nodes(compose).items():
        settings, env = node_settings(service, monkeypatch)
        check_role_store(settings.role, settings.store)  # what `serve` checks first: would not refuse
        url = urlparse(settings.clickhouse_url)
        assert settings.store == "clickhouse" and (url.scheme, url.hostname, url.port) == ("http", "clickhouse", 8123)
        assert settings.clickhouse_database == ch_env["CLICKHOUSE_DB"]
        assert settings.clickhouse_user == ch_env["CLICKHOUSE_USER"]
        assert settings.clickhouse_password == ch_env["CLICKHOUSE_PASSWORD"] == SECRETS["STEPLENS_CLICKHOUSE_PASSWORD"]
        fields = {f"STEPLENS_{f.upper()}" for f in Settings.model_fields}
        key_envs = {k.key_env for k in settings.api_keys}
        assert {k for k in env if k.startswith("STEPLENS_")} - fields == key_envs, name
        check_bind_policy(settings)  # 0.0.0.0 is allowed because the keys resolve
        assert settings.host == "0.0.0.0" and f":{settings.port}/healthz" in " ".join(service["healthcheck"]["test"])
        plan = plan_for(settings.role)
        assert (settings.grpc_port != 0) == plan.otlp, f"{name}: gRPC exactly on the ingest nodes"


def test_each_ingest_node_has_its_own_spool_volume(compose: dict, monkeypatch) -> None:
    volumes = []
    for service in steplens_nodes(compose).values():
        settings, _ = node_settings(service, monkeypatch)
        (mount,) = [v for v in service["volumes"] if settings.spool_path.is_relative_to(v.split(":")[1])]
        assert mount.split(":")[0] in compose["volumes"]
        volumes.append(mount.split(":")[0])
    assert len(set(volumes)) == len(volumes), "two nodes must never share a spool"


def test_dashboards_read_the_api_node_with_the_read_key(compose: dict, monkeypatch) -> None:
    dash = compose["services"]["dashboards"]
    _, params = parse(dash["command"])
    api_url = urlparse(params["api"])
    api_service = compose["services"][api_url.hostname]
    settings, env = node_settings(api_service, monkeypatch)
    assert settings.role == "api" and api_url.port == settings.port
    assert container_ports(dash) == {params["port"]}
    principal = KeyRing.from_settings(settings, environ=env).authenticate(dash["environment"]["STEPLENS_API_KEY"])
    assert principal.scopes == {"read"}
    assert dash["depends_on"][api_url.hostname]["condition"] == "service_healthy"


def test_collector_balances_traces_and_logs_by_trace_id_over_the_two_ingest_nodes(
    compose: dict, collector_config: dict, monkeypatch
) -> None:
    service = compose["services"]["collector"]
    config_path = next(a.split("=", 1)[1] for a in service["command"] if a.startswith("--config="))
    mounted = {v.split(":")[1]: v.split(":")[0] for v in service["volumes"]}
    assert (REPO / mounted[config_path]).resolve() == COLLECTOR

    (exporter_name,) = collector_config["service"]["pipelines"]["traces"]["exporters"]
    assert collector_config["service"]["pipelines"]["logs"]["exporters"] == [exporter_name]
    assert exporter_name.split("/")[0] == "loadbalancing"
    exporter = collector_config["exporters"][exporter_name]
    assert exporter["routing_key"] == "traceID"

    ingest_targets = set()
    for name, node in steplens_nodes(compose).items():
        settings, env = node_settings(node, monkeypatch)
        if settings.role == "ingest":
            ingest_targets.add(f"{name}:{settings.grpc_port}")
            ingest_settings, ingest_env = settings, env
    assert set(exporter["resolver"]["static"]["hostnames"]) == ingest_targets and len(ingest_targets) == 2
    assert set(service["depends_on"]) >= {t.split(":")[0] for t in ingest_targets}

    collector_env = {k: str(v) for k, v in service["environment"].items()}
    used = set(re.findall(r"\$\{env:([A-Za-z0-9_]+)\}", COLLECTOR.read_text()))
    assert used <= set(collector_env)
    headers = {k.lower(): re.sub(r"\$\{env:(\w+)\}", lambda m: collector_env[m[1]], v)
               for k, v in exporter["protocol"]["otlp"]["headers"].items()}
    key = presented_key(headers.get("authorization"), headers.get("x-api-key"))
    assert KeyRing.from_settings(ingest_settings, environ=ingest_env).authenticate(key).scopes == {"ingest"}

    # the balancer's own queue is on disk, on a named volume, and it never stops retrying
    assert exporter["retry_on_failure"]["enabled"] is True
    queue = exporter["sending_queue"]
    assert queue["enabled"] is True and queue["storage"] in collector_config["service"]["extensions"]
    queue_dir = collector_config["extensions"][queue["storage"]]["directory"]
    volume = next(v.split(":")[0] for v in service["volumes"] if v.split(":")[1] == queue_dir)
    assert volume in compose["volumes"]
    receivers = collector_config["receivers"]["otlp"]["protocols"]
    assert {int(p["endpoint"].rsplit(":", 1)[1]) for p in receivers.values()} == container_ports(service)


def test_secrets_have_no_default_and_compose_refuses_without_them(raw: dict) -> None:
    text = COMPOSE.read_text()
    assert {m["name"] for m in variables(text) if m["op"] == ":?"} == set(SECRETS)
    defaulted = {m["name"] for m in variables(text) if m["op"] == ":-"}
    assert not {n for n in defaulted if re.search("KEY|TOKEN|PASSWORD|SECRET", n)}, defaulted
    for missing in SECRETS:
        with pytest.raises(MissingVariable, match=missing):
            interpolate(raw, {k: v for k, v in SECRETS.items() if k != missing})


def _compose_cli() -> list[str] | None:
    """Compose v2 only: v1 (`docker-compose` 1.x, end of life) rejects the compose spec's `name:`."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    return None


def test_docker_compose_config_accepts_the_file(tmp_path) -> None:
    cli = _compose_cli()
    if cli is None:
        pytest.skip("`docker compose` (v2) is not installed here: the docker CLI has no compose plugin")
    env = {"PATH": __import__("os").environ.get("PATH", ""), **SECRETS}
    done = subprocess.run([*cli, "-f", str(COMPOSE), "config", "--quiet"], capture_output=True, text=True,
                          env=env, cwd=REPO, timeout=60)
    assert done.returncode == 0, done.stderr
    missing = subprocess.run([*cli, "-f", str(COMPOSE), "config", "--quiet"], capture_output=True, text=True,
                             env={k: v for k, v in env.items() if k != "STEPLENS_CLICKHOUSE_PASSWORD"},
                             cwd=REPO, timeout=60)
    assert missing.returncode != 0 and "STEPLENS_CLICKHOUSE_PASSWORD" in missing.stderr
