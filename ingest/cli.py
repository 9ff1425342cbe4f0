"""`steplens serve`: run the ingest server, turning configuration problems into one clear line.

Why a separate module from ingest.server: the server raises typed errors (ConfigError, PortInUse,
a missing config file) so it stays testable; only this entry point prints and picks exit codes.
"""

from __future__ import annotations

import logging
from pathlib import Path

from rich.markup import escape

from ingest.error_console import error_console
from ingest.errors import ConfigError

EXIT_CONFIG = 2


def serve(
    host: str | None = None,
    port: int | None = None,
    grpc_port: int | None = None,
    db: Path | None = None,
    config: Path | None = None,
    store: str | None = None,
    clickhouse_url: str | None = None,
    role: str | None = None,
) -> None:
    """Run until Ctrl-C / SIGTERM; exit code 2 with a message when the configuration cannot work."""
    import typer
    from pydantic import ValidationError

    from ingest.server import serve as run_server

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    err = error_console()
    try:
        run_server(host=host, port=port, grpc_port=grpc_port, db=db, config=config, store=store,
                   clickhouse_url=clickhouse_url, role=role)
    except (ConfigError, FileNotFoundError) as exc:
        err.print(f"[bold red]steplens serve:[/] {escape(str(exc))}", highlight=False)
        raise typer.Exit(EXIT_CONFIG) from None
    except ValidationError as exc:
        err.print(f"[bold red]steplens serve: invalid settings:[/]\n{escape(str(exc))}", highlight=False)
        raise typer.Exit(EXIT_CONFIG) from None
