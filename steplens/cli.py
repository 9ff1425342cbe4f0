"""`steplens` console script: parses arguments and dispatches, importing the owning package lazily.

Each command's real work lives in the package that owns the job; nothing here does more than
hand over typed arguments, so `steplens --help` stays fast and no package import cycle is made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="steplens",
    help="Observability for AI agent runs: OTLP ingest, query API, dashboards, reports.",
    no_args_is_help=True,
    add_completion=False,
)

DEFAULT_API = "http://127.0.0.1:4318"


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Interface to bind (default 127.0.0.1; 0.0.0.0 needs API keys).")] = None,
    port: Annotated[int | None, typer.Option(help="OTLP/HTTP and query API port (default 4318).")] = None,
    grpc_port: Annotated[int | None, typer.Option("--grpc-port", help="OTLP/gRPC port (default 4317, 0 disables).")] = None,
    db: Annotated[Path | None, typer.Option(help="DuckDB file (default ./data/steplens.duckdb).")] = None,
    config: Annotated[Path | None, typer.Option(help="steplens.toml with settings, keys, alert rules.")] = None,
) -> None:
    """Run the ingest server: OTLP receiver, DuckDB store, query API."""
    from ingest.cli import serve as run_server

    run_server(host=host, port=port, grpc_port=grpc_port, db=db, config=config)


def main() -> None:
    app()


if __name__ == "__main__":
    main()
