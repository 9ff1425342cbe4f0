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
DEMO_RUNS = 1000  # the same defaults as `make run` (steplens/stack.py)
DEMO_DAYS = 14.0


@app.callback()
def _root() -> None:
    """Observability for AI agent runs. (A callback keeps `steplens serve` a subcommand even while it
    is the only command; without one typer would run it as the root command.)"""


@app.command()
def serve(
    host: Annotated[str | None, typer.Option(help="Interface to bind (default 127.0.0.1; 0.0.0.0 needs API keys).")] = None,
    port: Annotated[int | None, typer.Option(help="OTLP/HTTP and query API port (default 4318).")] = None,
    grpc_port: Annotated[int | None, typer.Option("--grpc-port", help="OTLP/gRPC port (default 4317, 0 disables).")] = None,
    db: Annotated[Path | None, typer.Option(help="DuckDB file (default ./data/steplens.duckdb).")] = None,
    config: Annotated[Path | None, typer.Option(help="steplens.toml with settings, keys, alert rules.")] = None,
    store: Annotated[str | None, typer.Option(help="Storage backend: duckdb (default) or clickhouse.")] = None,
    clickhouse_url: Annotated[str | None, typer.Option(
        "--clickhouse-url", help="ClickHouse for --store clickhouse: http(s)://host:port or chdb:///path.")] = None,
    role: Annotated[str | None, typer.Option(help="all (default), or for a ClickHouse deployment: ingest, api or "
                                             "worker (see docs/deploy.md).")] = None,
) -> None:
    """Run the ingest server: OTLP receiver, store (DuckDB or ClickHouse), query API."""
    from ingest.cli import serve as run_server

    run_server(host=host, port=port, grpc_port=grpc_port, db=db, config=config, store=store,
               clickhouse_url=clickhouse_url, role=role)


@app.command()
def ui(
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
    port: Annotated[int, typer.Option(help="Dashboard port.")] = 8501,
    address: Annotated[str, typer.Option(help="Interface to listen on; beyond localhost needs a login.")] = "127.0.0.1",
) -> None:
    """Start the dashboards (Streamlit). The API key comes from STEPLENS_API_KEY."""
    from dashboards.launch import run_ui

    raise typer.Exit(run_ui(api=api, port=port, address=address))


@app.command()
def demo(
    endpoint: Annotated[str, typer.Option(help="The ingest server (base URL or its /v1/traces URL).")] = DEFAULT_API,
    runs: Annotated[int, typer.Option(min=0, help="How many agent runs in all.")] = DEMO_RUNS,
    days: Annotated[float, typer.Option(min=0, help="Days of history the runs are spread over (before now, "
                                        "or before the earliest stored run); 0: every run now.")] = DEMO_DAYS,
    seed: Annotated[int, typer.Option(help="Same seed, same runs.")] = 0,
    concurrency: Annotated[int, typer.Option(min=1, help="Runs in flight at once.")] = 64,
) -> None:
    """Run the example agents on a simulated model and send their traces: by default a history of
    14 days with planted events (a v2 release, a step creep, an outage). Key: STEPLENS_API_KEY."""
    from kernel.examples.cli import demo_command

    raise typer.Exit(demo_command(endpoint=endpoint, runs=runs, seed=seed, concurrency=concurrency, days=days))


@app.command(name="import")
def import_(
    paths: Annotated[list[Path], typer.Argument(help="Files or directories (searched for *.jsonl, *.json, *.bin, *.pb, +.gz).")],
    api: Annotated[str, typer.Option(help="The ingest server (base URL or its /v1/traces URL).")] = DEFAULT_API,
    batch_spans: Annotated[int, typer.Option("--batch-spans", min=1, help="Most spans per request.")] = 5000,
    batch_mib: Annotated[float, typer.Option("--batch-mib", min=0.01, help="Most MiB per request (protobuf).")] = 4.0,
) -> None:
    """Send saved traces (Collector file-exporter JSON lines, OTLP protobuf bodies) to a running server.
    Exit 1 when anything was rejected or unreadable, 2 when the import could not run. Key: STEPLENS_API_KEY."""
    from ingest.importer import import_command

    raise typer.Exit(import_command(paths, api, batch_spans=batch_spans, batch_mib=batch_mib))


trace_app = typer.Typer(help="Look at traces.", no_args_is_help=True)
app.add_typer(trace_app, name="trace")


@trace_app.command("show")
def trace_show(
    trace_id: Annotated[str, typer.Argument(help="The trace id (32 hexadecimal characters).")],
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
    max_spans: Annotated[int, typer.Option("--max-spans", help="Most spans drawn.")] = 2000,
) -> None:
    """Print a trace as a tree. The API key comes from STEPLENS_API_KEY."""
    from dashboards.terminal import show_trace

    raise typer.Exit(show_trace(trace_id, api=api, max_spans=max_spans))


report_app = typer.Typer(help="Reports read through the query API.", no_args_is_help=True)
app.add_typer(report_app, name="report")


@report_app.command("cost")
def report_cost(
    by: Annotated[
        str, typer.Option(help="Group by model, provider, tool, agent, version, project, user, conversation or day.")
    ] = "tool",
    since: Annotated[str, typer.Option(help="Runs since: relative (24h, 7d) or ISO 8601.")] = "7d",
    format: Annotated[str, typer.Option("--format", help="csv, md or json.")] = "md",
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
    project: Annotated[str | None, typer.Option(help="Only this project.")] = None,
) -> None:
    """Cost attribution (tool costs in three parts). The API key comes from STEPLENS_API_KEY."""
    from dashboards.report_cost import report_cost as run_report

    if format not in ("csv", "md", "json"):
        raise typer.BadParameter("use csv, md or json", param_hint="--format")
    raise typer.Exit(run_report(by=by, since=since, fmt=format, api=api, project=project))  # type: ignore[arg-type]


approvals_app = typer.Typer(help="Review agents' pending high-risk tool calls.", no_args_is_help=True)
app.add_typer(approvals_app, name="approvals")


@approvals_app.command("list")
def approvals_list(
    status: Annotated[str, typer.Option(help="pending, approved, rejected, expired or all.")] = "pending",
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Most approvals shown.")] = 100,
) -> None:
    """List approvals, newest first. The API key (scope read) comes from STEPLENS_API_KEY."""
    from kernel.approvals_cli import list_command

    raise typer.Exit(list_command(api, status, limit))


@approvals_app.command("approve")
def approvals_approve(
    approval_id: Annotated[str, typer.Argument(help="The approval id (from `steplens approvals list`).")],
    reason: Annotated[str | None, typer.Option(help="Why (shown to the agent).")] = None,
    by: Annotated[str | None, typer.Option(help="Who decides (default: the API key's name).")] = None,
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
) -> None:
    """Approve a pending call: the waiting agent runs it. Needs an admin key in STEPLENS_API_KEY."""
    from kernel.approvals_cli import decide_command

    raise typer.Exit(decide_command(api, approval_id, True, reason, by))


@approvals_app.command("reject")
def approvals_reject(
    approval_id: Annotated[str, typer.Argument(help="The approval id (from `steplens approvals list`).")],
    reason: Annotated[str | None, typer.Option(help="Why (shown to the agent).")] = None,
    by: Annotated[str | None, typer.Option(help="Who decides (default: the API key's name).")] = None,
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
) -> None:
    """Reject a pending call: the agent is told it was denied, with the reason. Needs an admin key."""
    from kernel.approvals_cli import decide_command

    raise typer.Exit(decide_command(api, approval_id, False, reason, by))


score_app = typer.Typer(help="Scores of runs, spans and sessions (human labels, feedback, judges).",
                         no_args_is_help=True)
app.add_typer(score_app, name="score")


@score_app.command("add")
def score_add(
    name: Annotated[str, typer.Argument(help="The score's name, e.g. helpfulness.")],
    value: Annotated[str, typer.Argument(help="true/false, a number, or a label.")],
    trace_id: Annotated[str | None, typer.Option("--trace", help="The run's trace id.")] = None,
    span_id: Annotated[str | None, typer.Option("--span", help="A span of that trace.")] = None,
    session_id: Annotated[str | None, typer.Option("--session", help="A session/conversation id instead.")] = None,
    data_type: Annotated[str | None, typer.Option("--type", help="numeric, boolean or categorical.")] = None,
    comment: Annotated[str | None, typer.Option(help="Why.")] = None,
    author: Annotated[str | None, typer.Option(help="Who scored (default: none).")] = None,
    source: Annotated[str, typer.Option(help="human, api, judge, rule, eval or client.")] = "human",
    score_id: Annotated[str | None, typer.Option("--id", help="Idempotency id (default: derived).")] = None,
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
) -> None:
    """Store one score (durably). Needs a key with the annotate scope in STEPLENS_API_KEY."""
    from ingest.scores.cli import add_command

    raise typer.Exit(add_command(api, name, value, trace_id=trace_id, span_id=span_id, session_id=session_id,
                                 data_type=data_type, comment=comment, author=author, source=source,
                                 score_id=score_id))


@score_app.command("list")
def score_list(
    trace_id: Annotated[str | None, typer.Option("--trace", help="Scores of this trace.")] = None,
    name: Annotated[str | None, typer.Option(help="Only this score name.")] = None,
    source: Annotated[str | None, typer.Option(help="Only this source.")] = None,
    agent: Annotated[str | None, typer.Option(help="Scores of this agent's runs.")] = None,
    version: Annotated[str | None, typer.Option(help="Scores of runs of this version.")] = None,
    since: Annotated[str | None, typer.Option(help="Scored since: ISO 8601 or 24h, 7d...")] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Most scores shown.")] = 100,
    format: Annotated[str, typer.Option(help="table or json.")] = "table",
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
) -> None:
    """List scores, newest first. The API key (scope read) comes from STEPLENS_API_KEY."""
    from ingest.scores.cli import list_command

    if format not in ("table", "json"):
        raise typer.BadParameter("use table or json", param_hint="--format")
    params = {"trace_id": trace_id, "name": name, "source": source, "agent": agent, "version": version,
              "since": since, "limit": limit}
    raise typer.Exit(list_command(api, params, format))


alerts_app = typer.Typer(help="Alert rules (defined in steplens.toml, evaluated by the server).", no_args_is_help=True)
app.add_typer(alerts_app, name="alerts")


@alerts_app.command("check")
def alerts_check(
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
) -> None:
    """Evaluate every alert rule once; exit 1 when anything fires, 2 when the check fails.
    Needs the admin scope; the API key comes from STEPLENS_API_KEY."""
    from ingest.alerts.cli import check_command

    raise typer.Exit(check_command(api))


dataset_app = typer.Typer(help="Datasets of eval cases made from stored runs (for `steplens eval run`).",
                          no_args_is_help=True)
app.add_typer(dataset_app, name="dataset")


@dataset_app.command("create")
def dataset_create(
    name: Annotated[str, typer.Argument(help="Dataset name (letters, digits, _ . -).")],
    filter_: Annotated[list[str] | None, typer.Option("--filter", help="A GET /api/runs parameter as KEY=VALUE "
                                                                        "(agent=ops, ok=false, since=7d, limit=50).")] = None,
    trace_id: Annotated[list[str] | None, typer.Option("--trace-id", help="A run by trace id (repeatable).")] = None,
    queue: Annotated[str | None, typer.Option(help="The runs people labelled in this annotation queue.")] = None,
    out: Annotated[Path | None, typer.Option(help="Also write the cases to this JSONL file.")] = None,
    expected: Annotated[str, typer.Option(help="correction_or_answer, answer, correction or none.")] = "correction_or_answer",
    correction_score: Annotated[str, typer.Option(help="The score whose comment (or label) is a reviewer's "
                                                       "correction.")] = "correction",
    tools: Annotated[str, typer.Option(help="sequence, set or none: the run's tools as the expectation.")] = "sequence",
    forbidden_tool: Annotated[list[str] | None, typer.Option("--forbidden-tool", help="A tool no case may call.")] = None,
    replace: Annotated[bool, typer.Option(help="Replace a dataset of this name.")] = False,
    description: Annotated[str | None, typer.Option(help="What the dataset is for.")] = None,
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
) -> None:
    """Save stored runs as a dataset of eval cases (task, expected answer, tools). Needs the annotate scope."""
    from ingest.datasets.cli import create_command

    raise typer.Exit(create_command(api, name, filter_ or [], trace_id or [], out, expected, tools,
                                    forbidden_tool or [], replace, description, queue=queue,
                                    correction_score=correction_score))


@dataset_app.command("get")
def dataset_get(
    name: Annotated[str, typer.Argument(help="Dataset name.")],
    out: Annotated[Path, typer.Option(help="JSONL file to write.")],
    project: Annotated[str | None, typer.Option(help="The project, when several of yours have the name.")] = None,
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
) -> None:
    """Download a dataset as the JSONL `steplens eval run` reads."""
    from ingest.datasets.cli import download

    raise typer.Exit(download(api, name, out, project))


search_app = typer.Typer(help="The server's full-text search index.", no_args_is_help=True)
app.add_typer(search_app, name="search")


@search_app.command("reindex")
def search_reindex(
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
    wait: Annotated[bool, typer.Option("--wait/--no-wait", help="Follow the rebuild until it is done.")] = True,
) -> None:
    """Rebuild the search index from the stored spans (searches see a partial index meanwhile).
    Needs the operator scope; the API key comes from STEPLENS_API_KEY."""
    from ingest.search.cli import reindex_command

    raise typer.Exit(reindex_command(api, wait))


@search_app.command("status")
def search_status(
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
) -> None:
    """How far the search index lags the stored spans."""
    from ingest.search.cli import status_command

    raise typer.Exit(status_command(api))


eval_app = typer.Typer(help="Evaluate an agent on a dataset; compare two evaluations.", no_args_is_help=True)
app.add_typer(eval_app, name="eval")


@eval_app.command("run")
def eval_run(
    dataset: Annotated[Path, typer.Argument(help="JSONL cases (e.g. kernel/examples/datasets/ticket_eval.jsonl).")],
    agent: Annotated[str, typer.Option(help="Example agent to evaluate.")] = "ticket",
    version: Annotated[str, typer.Option(help="Agent version.")] = "v1",
    endpoint: Annotated[str | None, typer.Option(help="Send the runs' traces to this ingest server.")] = None,
    seed: Annotated[int, typer.Option(help="Same seed, same runs.")] = 0,
    out: Annotated[Path, typer.Option(help="Where results go (<run_id>.json).")] = Path("data/evals"),
    concurrency: Annotated[int, typer.Option(min=1, help="Cases in flight at once.")] = 8,
    no_faults: Annotated[bool, typer.Option("--no-faults", help="A flawless simulated model.")] = False,
    scores: Annotated[bool, typer.Option(help="With --endpoint: store each case's verdict as a score "
                                              "(eval_passed, source eval) on its run.")] = True,
) -> None:
    """Run every case as a traced run tagged with eval ids; save and print the results."""
    from kernel.eval.cli import eval_run_command

    raise typer.Exit(eval_run_command(dataset, agent, version, endpoint, seed, out, concurrency, no_faults,
                                      scores=scores))


@eval_app.command("compare")
def eval_compare(
    run_a: Annotated[str, typer.Argument(help="Baseline: a run id or a results file.")],
    run_b: Annotated[str, typer.Argument(help="Candidate: a run id or a results file.")],
    runs_dir: Annotated[Path, typer.Option("--dir", help="Where run ids are looked up.")] = Path("data/evals"),
) -> None:
    """Regressions and improvements per case (exit 1 when any case regressed)."""
    from kernel.eval.cli import eval_compare_command

    raise typer.Exit(eval_compare_command(run_a, run_b, runs_dir))


@app.command()
def sql(
    query: Annotated[str, typer.Argument(help="One SELECT over the views runs, spans, tool_calls, scores ('-': read stdin).")],
    format: Annotated[str, typer.Option("--format", help="table, csv or json.")] = "table",
    limit: Annotated[int | None, typer.Option(min=1, help="Most rows (the server's sql_max_rows at most).")] = None,
    project: Annotated[str | None, typer.Option(help="Only this project (narrows the key's, never widens).")] = None,
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
) -> None:
    """Run one read-only SQL query through the server (POST /api/sql). Exit 1 when it was refused or
    failed, 2 when it could not run. The API key (scope read) comes from STEPLENS_API_KEY."""
    from ingest.sql.cli import sql_command

    if format not in ("table", "csv", "json"):
        raise typer.BadParameter("use table, csv or json", param_hint="--format")
    raise typer.Exit(sql_command(query, api, fmt=format, limit=limit, project=project))


@eval_app.command("backfill")
def eval_backfill(
    rule: Annotated[str, typer.Option(help="The evaluator rule (its name in steplens.toml).")],
    since: Annotated[str | None, typer.Option(help="Runs started since: relative (7d) or ISO 8601; default all.")] = None,
    api: Annotated[str, typer.Option(help="Query API base URL (the ingest server).")] = DEFAULT_API,
) -> None:
    """Score a rule's past runs in the server, with a progress bar; runs already scored are skipped.
    Exit 1 when some evaluations ended in an error. Needs an admin key in STEPLENS_API_KEY (with keys)."""
    from ingest.evaluators.backfill import backfill_command

    raise typer.Exit(backfill_command(rule, since, api))


spool_app = typer.Typer(help="Dead records of the write-ahead spool: list them, replay them.", no_args_is_help=True)
app.add_typer(spool_app, name="spool")


@spool_app.command("list")
def spool_list(
    config: Annotated[Path | None, typer.Option(help="steplens.toml of the server.")] = None,
    db: Annotated[Path | None, typer.Option(help="DuckDB file of the server (its spool is next to it).")] = None,
) -> None:
    """List the acknowledged records the server set aside (project, spans, the error)."""
    from ingest.spool_cli import list_command

    raise typer.Exit(list_command(config, db))


@spool_app.command("replay")
def spool_replay(
    config: Annotated[Path | None, typer.Option(help="steplens.toml of the server.")] = None,
    db: Annotated[Path | None, typer.Option(help="DuckDB file of the server (its spool is next to it).")] = None,
) -> None:
    """Load the dead records again, each into its own project, once their cause is fixed. Run it with
    the server stopped; idempotent. Exit 1 when a record failed again, 2 when it could not run."""
    from ingest.spool_cli import replay_command

    raise typer.Exit(replay_command(config, db))


@app.command()
def mcp(
    transport: Annotated[str, typer.Option(help="stdio (a coding agent starts this command) or http (streamable HTTP).")] = "stdio",
    api: Annotated[str, typer.Option(envvar="STEPLENS_API_URL", help="Query API base URL (the ingest server).")] = DEFAULT_API,
    api_key_env: Annotated[str, typer.Option("--api-key-env", help="Environment variable holding the read key.")] = "STEPLENS_API_KEY",
    host: Annotated[str, typer.Option(help="http: loopback interface to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="http: port to listen on.")] = 8765,
) -> None:
    """MCP server for coding agents: list runs, read traces as transcripts, search spans, failure
    clusters, tool stats, regressions, cost, SQL; a client of the query API with a read key."""
    from ingest.mcp_server.serve import mcp_command

    raise typer.Exit(mcp_command(transport, api, api_key_env, host, port))


@app.command()
def export(
    since: Annotated[str | None, typer.Option(help="Rows since: relative (24h, 7d) or ISO 8601 (default: all).")] = None,
    until: Annotated[str | None, typer.Option(help="Rows before: relative or ISO 8601.")] = None,
    format: Annotated[str, typer.Option("--format", help="parquet, jsonl or otlp (OTLP/JSON lines of the spans).")] = "parquet",
    out: Annotated[Path, typer.Option(help="Directory the files go to (<table>.parquet, .jsonl, spans.otlp.jsonl).")] = Path("export"),
    table: Annotated[list[str] | None, typer.Option(help="A table to export (repeat; default runs, spans, scores).")] = None,
    project: Annotated[str | None, typer.Option(help="Only this project (an operator key reads all).")] = None,
    api: Annotated[str, typer.Option(envvar="STEPLENS_API_URL", help="Query API base URL (the ingest server).")] = DEFAULT_API,
) -> None:
    """Export runs, spans and scores through GET /api/export, with a progress bar. Exit 1 when a table
    failed, 2 when nothing could start. The API key (scope read) comes from STEPLENS_API_KEY."""
    from ingest.export.cli import ALL_TABLES, export_command
    from ingest.export.formats import Format

    try:
        fmt = Format(format)
    except ValueError:
        raise typer.BadParameter("use parquet, jsonl or otlp", param_hint="--format") from None
    raise typer.Exit(export_command(api, out, fmt, since, until, list(table or ALL_TABLES), project))

tasks_app = typer.Typer(help="Async agent tasks: submit, poll, cancel, and run them with a worker.",
                        no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")
TasksDb = Annotated[Path, typer.Option("--db", help="The task database (SQLite).")]
DEFAULT_TASKS_DB = Path("data/tasks.sqlite")


@tasks_app.command("submit")
def tasks_submit(
    agent: Annotated[str, typer.Argument(help="Agent: module:attribute (an agent or a function building one), "
                                              "or an example agent name@version (ticket@v1).")],
    text: Annotated[str, typer.Argument(help="The task given to the agent.")],
    db: TasksDb = DEFAULT_TASKS_DB,
    webhook: Annotated[str | None, typer.Option(help="POST the task here when it ends (signed with "
                                                     "STEPLENS_WEBHOOK_SECRET set on the worker).")] = None,
    idempotency_key: Annotated[str | None, typer.Option(help="Same key, same task: a retried submit runs once.")] = None,
    retryable: Annotated[bool, typer.Option(help="Run it again when its worker dies mid-run (else: interrupted).")] = False,
    max_attempts: Annotated[int, typer.Option(min=1, help="Most runs of a retryable task.")] = 3,
    user: Annotated[str | None, typer.Option(help="The end user's id (enduser.id on the run).")] = None,
    conversation: Annotated[str | None, typer.Option(help="The conversation id of the run.")] = None,
) -> None:
    """Queue a task and print its id at once (a worker runs it)."""
    from kernel.tasks.cli import submit_command

    raise typer.Exit(submit_command(db, agent, text, webhook_url=webhook, idempotency_key=idempotency_key,
                                    retryable=retryable, max_attempts=max_attempts, user_id=user,
                                    conversation_id=conversation))


@tasks_app.command("status")
def tasks_status(
    task_id: Annotated[str, typer.Argument(help="The id submit printed.")],
    db: TasksDb = DEFAULT_TASKS_DB,
    as_json: Annotated[bool, typer.Option("--json", help="The whole task record as JSON.")] = False,
) -> None:
    """A task's status, attempts, timings, reason and webhook delivery."""
    from kernel.tasks.cli import status_command

    raise typer.Exit(status_command(db, task_id, as_json=as_json))


@tasks_app.command("result")
def tasks_result(
    task_id: Annotated[str, typer.Argument(help="The id submit printed.")],
    db: TasksDb = DEFAULT_TASKS_DB,
    wait: Annotated[float, typer.Option(help="Seconds to wait for the task to end (0: answer now).")] = 0.0,
) -> None:
    """The run's outcome as JSON (ok, stop reason, answer, trace id); exit 1 unless it succeeded."""
    from kernel.tasks.cli import result_command

    raise typer.Exit(result_command(db, task_id, wait_s=wait))


@tasks_app.command("list")
def tasks_list(
    db: TasksDb = DEFAULT_TASKS_DB,
    status: Annotated[str | None, typer.Option(help="Only this status (queued, running, succeeded, failed, "
                                                    "cancelled, interrupted).")] = None,
    limit: Annotated[int, typer.Option(min=1, help="Most tasks listed.")] = 100,
) -> None:
    """Tasks, newest first."""
    from kernel.tasks.cli import list_command

    raise typer.Exit(list_command(db, status=status, limit=limit))


@tasks_app.command("cancel")
def tasks_cancel(
    task_id: Annotated[str, typer.Argument(help="The id submit printed.")],
    db: TasksDb = DEFAULT_TASKS_DB,
    reason: Annotated[str | None, typer.Option(help="Recorded on the task.")] = None,
) -> None:
    """Cancel a task: a queued one never starts, a running one's run is cancelled by its worker."""
    from kernel.tasks.cli import cancel_command

    raise typer.Exit(cancel_command(db, task_id, reason=reason))


@tasks_app.command("worker")
def tasks_worker(
    db: TasksDb = DEFAULT_TASKS_DB,
    concurrency: Annotated[int, typer.Option(min=1, help="Runs at once.")] = 4,
    poll: Annotated[float, typer.Option(min=0.01, help="Seconds between looks for new tasks and cancels.")] = 0.5,
    lease: Annotated[float, typer.Option(min=0.1, help="Seconds a task stays held without this worker "
                                                       "renewing it (another host takes it over after).")] = 30.0,
    endpoint: Annotated[str | None, typer.Option(help="Send the runs' traces to this ingest server.")] = None,
    drain: Annotated[bool, typer.Option(help="Stop once nothing is queued, running or awaiting a webhook.")] = False,
    create: Annotated[bool, typer.Option(help="Create the task database if it is missing.")] = False,
) -> None:
    """Run the queue until stopped (Ctrl-C / SIGTERM): resumes what a dead worker left, delivers webhooks."""
    from kernel.tasks.cli import worker_command

    raise typer.Exit(worker_command(db, concurrency=concurrency, poll_s=poll, lease_s=lease, endpoint=endpoint,
                                    drain=drain, create=create))


@app.command(name="migrate")
def migrate_store(
    from_: Annotated[Path, typer.Option("--from", help="The DuckDB file to copy (the server's --db), not in use.")],
    to: Annotated[str, typer.Option(help="clickhouse://host:8123/database (user@host for a user), clickhouses://... "
                                    "(HTTPS) or chdb:///path; the password comes from STEPLENS_CLICKHOUSE_PASSWORD.")],
    chunk_rows: Annotated[int, typer.Option("--chunk-rows", min=100, help="Rows per insert.")] = 20_000,
    config: Annotated[Path | None, typer.Option(help="steplens.toml (for retention_days and clickhouse_cluster).")] = None,
) -> None:
    """Copy a DuckDB store (spans, runs, scores, logs and every other table ClickHouse has) into ClickHouse
    with a progress bar; re-running resumes and never duplicates. Exit 1 a table failed, 2 could not start."""
    from ingest.copy_store.cli import migrate_command

    raise typer.Exit(migrate_command(from_, to, chunk_rows=chunk_rows, config=config))


def main() -> None:
    app()


if __name__ == "__main__":
    main()
