"""Ops agent (incident triage) over one synthetic incident.

The incident: at 14:02 UTC a config change (rev 4821, "tune db pool") cut the API gateway's
database connection pool from 100 to 10. From 14:05 requests queue for a connection: checkout
p99 latency goes from ~180 ms to ~2.4 s and 5xx rises to ~7%. Only the gateway's logs say
"pool exhausted" and name the config file; the other services only see the symptoms.

Tools: `query_metrics`, `search_logs` (a paid log-search API), `read_repo_file`.

Versions (the documented difference):
- v1: `search_logs` says to start with the `gateway` service for latency or error spikes.
- v2: `search_logs` is described vaguely ("Search logs."). Models then search the alerting
  service and its neighbours first and reach the gateway later: more steps, more tokens, more
  cost per run, and more runs that hit the cost budget.
"""

from __future__ import annotations

import random
import re
from typing import Annotated

from pydantic import Field

from kernel.budgets import Budget
from kernel.examples.data import NotFound, Task
from kernel.examples.memory import Memory
from kernel.examples.simulated import Act, Answer, Intent
from kernel.tools import Tool, tool

AGENT = "ops"
MODEL = "claude-sonnet-4-5"
RESPONSE_MODEL = "claude-sonnet-4-5-20250929"
FALLBACK_MODEL = "claude-haiku-4-5"
PROVIDER = "anthropic"
BUDGET = Budget(max_steps=9, max_cost_usd=0.05, max_consecutive_errors=3)

SYSTEM_PROMPT = (
    "You are an on-call SRE assistant. Find the root cause of the incident from metrics, logs and "
    "the repository; name the change that caused it and the fix. Do not guess: cite evidence."
)

LOGS_V1 = (
    "Search one service's logs (last 2 h) for a query string. For latency or error spikes start "
    "with the `gateway` service: every request passes through it and it logs connection-pool and "
    "upstream errors."
)
LOGS_V2 = "Search logs."
VERSIONS = {
    "v1": "search_logs says to start with the gateway for latency/error spikes",
    "v2": "search_logs is described vaguely; models search other services first (more steps, cost)",
}

SERVICES = ("gateway", "checkout", "payments", "inventory", "postgres")
CONFIG_PATH = "deploy/gateway/config.yaml"

_METRICS: dict[tuple[str, str], str] = {
    ("checkout", "latency_p99_ms"): "13:30-14:04 ~180 ms; 14:05-15:00 ~2400 ms (step change at 14:05)",
    ("checkout", "error_rate"): "13:30-14:04 0.2%; 14:05-15:00 7.1% (mostly 504 from gateway)",
    ("gateway", "latency_p99_ms"): "13:30-14:04 ~150 ms; 14:05-15:00 ~2350 ms",
    ("gateway", "error_rate"): "13:30-14:04 0.1%; 14:05-15:00 6.8%",
    ("gateway", "db_connections_in_use"): "13:30-14:01 35-60 of 100; 14:03-15:00 10 of 10 (saturated)",
    ("payments", "latency_p99_ms"): "13:30-15:00 ~210 ms (flat)",
    ("payments", "error_rate"): "13:30-15:00 0.3% (flat)",
    ("inventory", "latency_p99_ms"): "13:30-15:00 ~90 ms (flat)",
    ("postgres", "cpu_percent"): "13:30-14:04 45%; 14:05-15:00 22% (fewer queries arrive)",
    ("postgres", "connections"): "13:30-14:01 ~70 of 500; 14:03-15:00 ~20 of 500",
}
METRIC_NAMES = sorted({m for _, m in _METRICS})

_LOGS: dict[str, list[str]] = {
    "gateway": [
        "14:02:11 INFO config reloaded from deploy/gateway/config.yaml (rev 4821)",
        "14:05:03 ERROR db pool exhausted: timed out after 2000 ms waiting for a connection "
        "(pool size 10 from deploy/gateway/config.yaml, waiting 148)",
        "14:05:04 ERROR request failed: upstream checkout /cart/submit -> 504 (db pool exhausted)",
        "14:06:40 WARN db pool exhausted (pool size 10, waiting 212)",
    ],
    "checkout": [
        "14:05:07 WARN call to gateway took 2412 ms",
        "14:05:09 ERROR submit cart failed: 504 Gateway Timeout",
    ],
    "payments": ["14:10:00 INFO settled 1,204 payments"],
    "inventory": ["14:00:00 INFO stock sync ok"],
    "postgres": ["14:03:30 LOG connection count dropped from 71 to 19"],
}

_FILES: dict[str, str] = {
    CONFIG_PATH: (
        "# gateway runtime config\nlisten: 0.0.0.0:8080\nupstreams: [checkout, payments, inventory]\n"
        "db:\n  host: postgres.internal\n  pool:\n    max_connections: 10   # rev 4821 (14:02): was 100, "
        "\"tune db pool\"\n    acquire_timeout_ms: 2000\n"
    ),
    "deploy/checkout/config.yaml": "listen: 0.0.0.0:8081\ngateway: http://gateway:8080\ntimeout_ms: 5000\n",
    "CHANGELOG.md": "## rev 4821 (14:02 UTC)\n- gateway: tune db pool\n## rev 4820\n- checkout: copy changes\n",
}


READ_REPO_FILE_DESCRIPTION = "Read a file of the infrastructure repository (configs under deploy/<service>/)."


def read_file(path: str) -> str:
    """A file of the repository; `NotFound` for any other path. Shared by the local tool and the
    demo's MCP server (kernel.examples.demo_mcp_server), so both answer alike."""
    content = _FILES.get(path.strip().lstrip("/"))
    if content is None:
        raise NotFound("file", path, "configs live at deploy/<service>/config.yaml")
    return content


def build_tools(version: str) -> list[Tool]:
    """The three read-only tools. Only `search_logs`'s description depends on the version."""

    @tool(description=f"Summary of one metric of one service over the last 2 h. Metrics: {', '.join(METRIC_NAMES)}.")
    async def query_metrics(
        service: Annotated[str, Field(description=f"one of {', '.join(SERVICES)}")],
        metric: str,
    ) -> dict:
        if service not in SERVICES:
            raise NotFound("service", service, f"services: {', '.join(SERVICES)}")
        series = _METRICS.get((service, metric))
        if series is None:
            raise NotFound("metric", f"{service}/{metric}")
        return {"service": service, "metric": metric, "summary": series}

    @tool(description=LOGS_V1 if version == "v1" else LOGS_V2, price_usd=0.001)
    async def search_logs(service: str, query: str) -> dict:
        if service not in SERVICES:
            raise NotFound("service", service, f"services: {', '.join(SERVICES)}")
        words = [w for w in query.lower().split() if w]
        lines = [line for line in _LOGS[service] if any(w in line.lower() for w in words)] or []
        return {"service": service, "query": query, "matches": lines}

    @tool(description=READ_REPO_FILE_DESCRIPTION)
    async def read_repo_file(path: str) -> str:
        return read_file(path)

    return [query_metrics, search_logs, read_repo_file]


_TASKS = (
    ("Alert: checkout p99 latency above 2 s since 14:05 UTC. Find the root cause.", "checkout"),
    ("Users report slow checkouts and 5xx errors since about 14:05. What changed?", "checkout"),
    ("PagerDuty: error rate on checkout is at 7%. Triage it and name the root cause.", "checkout"),
    ("Gateway latency SLO burn alert fired at 14:07. Investigate.", "gateway"),
)


def sample_task(rng: random.Random) -> Task:
    text, _ = rng.choice(_TASKS)
    return Task(AGENT, "incident", text, ("connection pool", "4821", "100"))


_PATH_RE = re.compile(r"deploy/[\w-]+/config\.yaml")


class OpsPolicy:
    """Metrics of the alerting service, then logs until the pool errors show up, then the config
    they name, then the answer. Implements `AgentPolicy`."""

    def next(self, memory: Memory, rng: random.Random) -> Intent:
        alerting = "gateway" if "gateway" in memory.task.lower() else "checkout"
        if not memory.ok_results("query_metrics"):
            return Act("query_metrics", {"service": alerting, "metric": "latency_p99_ms"},
                       f"First confirm the symptom on {alerting}.")
        config = memory.last_ok("read_repo_file")
        if isinstance(config, str) and "max_connections" in config:
            return Answer(
                "Root cause: config change rev 4821 at 14:02 UTC (\"tune db pool\") cut the gateway's database "
                "connection pool from 100 to 10 (deploy/gateway/config.yaml). From 14:05 requests wait for a "
                "connection (pool exhausted), so p99 latency went from ~180 ms to ~2.4 s and 5xx to ~7%. "
                "Fix: revert max_connections to 100 and redeploy the gateway.",
                "The config confirms the log evidence.",
            )
        evidence = self._pool_evidence(memory)
        if evidence is not None:
            if memory.not_found("read_repo_file") and not memory.ok_results("read_repo_file"):
                return Act("read_repo_file", {"path": CONFIG_PATH}, "Try the gateway config path again.")
            return Act("read_repo_file", {"path": evidence},
                       "The gateway logs name the pool and a config reload; read that config.")
        searched = {a.get("service") for a, _ in memory.ok_results("search_logs")}
        if LOGS_V1 in memory.system:
            order = ["gateway"]
        else:
            # Without the hint the model starts where the alert fired and wanders through neighbours.
            others = [s for s in ("checkout", "payments", "postgres", "inventory") if s != alerting]
            rng_order = random.Random(memory.seed)  # the same wandering for the whole run
            rng_order.shuffle(others)
            order = [alerting, *others[: rng_order.randint(0, 2)], "gateway"]
        for service in order:
            if service not in searched:
                return Act("search_logs", {"service": service, "query": "error timeout pool"},
                           f"Look for errors in the {service} logs.")
        return Act("search_logs", {"service": "gateway", "query": "pool"}, "Search the gateway for pool errors.")

    @staticmethod
    def _pool_evidence(memory: Memory) -> str | None:
        for _args, result in memory.ok_results("search_logs"):
            text = str(result)
            if "pool exhausted" in text:
                found = _PATH_RE.search(text)
                return found.group(0) if found else CONFIG_PATH
        return None

    def made_up_answer(self, memory: Memory, rng: random.Random) -> str:
        return rng.choice((
            "Root cause: a slow database query in checkout. Fix: add an index and restart checkout.",
            "Root cause: payments provider degradation; nothing to do on our side.",
        ))
