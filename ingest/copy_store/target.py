"""Where `steplens migrate --to` points: a ClickHouse server or an embedded chDB directory.

Forms: `clickhouse://[user@]host[:port]/database` (HTTP, port 8123 by default),
`clickhouses://...` (HTTPS, 8443), `chdb:///path[?database=name]`. The password never goes in the
URL (it would land in shell history and process lists): it comes from STEPLENS_CLICKHOUSE_PASSWORD.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

from ingest.errors import ConfigError

DEFAULT_DATABASE = "steplens"
PASSWORD_ENV = "STEPLENS_CLICKHOUSE_PASSWORD"


@dataclass(frozen=True)
class Target:
    url: str  # what ingest.store.clickhouse.transport.open_transport takes: http(s)://host:port or chdb:///path
    database: str
    user: str = "default"
    password: str = field(default="", repr=False)

    @property
    def shown(self) -> str:
        """The target for messages (never the password)."""
        return f"{self.url} database {self.database}"


def parse_target(text: str, environ: dict[str, str] | None = None) -> Target:
    env = os.environ if environ is None else environ
    parts = urlsplit(text)
    if parts.scheme == "chdb":
        path = parts.path or parts.netloc
        if not path:
            raise ConfigError("--to chdb:///PATH needs a data directory, e.g. chdb:///var/lib/steplens/ch")
        database = (parse_qs(parts.query).get("database") or [DEFAULT_DATABASE])[0]
        return Target(f"chdb://{path}", database)
    if parts.scheme in ("clickhouse", "clickhouses"):
        if parts.password:
            raise ConfigError(f"put the ClickHouse password in {PASSWORD_ENV}, not in the --to URL")
        if not parts.hostname:
            raise ConfigError("--to clickhouse://HOST:8123/DATABASE needs a host")
        secure = parts.scheme == "clickhouses"
        port = parts.port or (8443 if secure else 8123)
        database = parts.path.strip("/") or DEFAULT_DATABASE
        if "/" in database:
            raise ConfigError(f"--to names one database after the host, not {database!r}")
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        return Target(f"{'https' if secure else 'http'}://{host}:{port}", database, parts.username or "default",
                      env.get(PASSWORD_ENV, ""))
    raise ConfigError(
        f"--to must be clickhouse://host:8123/database, clickhouses://host:8443/database or chdb:///path, not {text!r}"
    )
