"""Parse a user's SQL with sqlglot, refuse anything but one read-only SELECT over the views, and
rewrite it so that the only data it can reach is the caller's projects' rows.

Why a parser and a rewrite, not string checks or trust: a query is text an attacker writes. The
statement is parsed into a tree (DuckDB dialect); every table reference is resolved by scope, the
way DuckDB resolves it, to either one of the query's own CTEs or a view name; every function call
must be on the allow-list (ingest/sql/functions.py). The tree is then rewritten: view references
point at server-made CTEs bound to the caller's projects (ingest/sql/views.py) and the query's own
CTEs get server-made names, so that if sqlglot and DuckDB ever disagreed about what a name means,
DuckDB would find no table by that name (an error) instead of a real table. The rendered query
runs as a subquery under the server's CTEs and row limit; the project never comes from the query.
"""

from __future__ import annotations

from dataclasses import dataclass

import sqlglot
from sqlglot import exp
from sqlglot.errors import OptimizeError, ParseError, SqlglotError, TokenError
from sqlglot.optimizer.scope import Scope, traverse_scope

from ingest.sql.functions import function_name, is_allowed
from ingest.sql.views import RESERVED_PREFIX, VIEWS_BY_NAME, View

QUERY_ALIAS = f"{RESERVED_PREFIX}query"


class Refused(ValueError):
    """The query is not one read-only SELECT over the views; `str()` says what was refused (a 400)."""


@dataclass(frozen=True)
class Prepared:
    """The query as it runs: server CTEs + the rewritten query + the row limit, with parameters."""

    sql: str
    params: list[object]
    views: tuple[str, ...]  # the views it reads, in the order of `VIEWS`
    dialect: str = "duckdb"  # the store it is written for (ingest/sql/clickhouse.py renders ClickHouse's)


# Statements and clauses that write, change settings, reach files or other databases. Only a query
# (SELECT, set operations of SELECTs) passes the top-level check; these are also refused anywhere
# inside one, whatever sqlglot makes of a dialect's syntax.
_NOT_READS: tuple[type[exp.Expression], ...] = (
    exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop, exp.Alter, exp.Copy, exp.Command,
    exp.Pragma, exp.Set, exp.Use, exp.Attach, exp.Detach, exp.Install, exp.Into, exp.Describe, exp.Summarize,
    exp.Transaction, exp.Commit, exp.Rollback, exp.LoadData, exp.Cache, exp.Uncache, exp.Refresh,
)  # fmt: skip


def _statement_kind(node: exp.Expression) -> str:
    if isinstance(node, exp.Command):
        return str(node.this).upper()
    return type(node).__name__.upper()


def _parse(text: str) -> exp.Query:
    try:
        statements = [s for s in sqlglot.parse(text, read="duckdb") if s is not None]
    except (ParseError, TokenError) as exc:
        errors = getattr(exc, "errors", None) or []
        if errors:
            first = errors[0]
            where = f" at line {first.get('line')}, column {first.get('col')}" if first.get("line") else ""
            near = f" near {first['highlight']!r}" if first.get("highlight") else ""
            raise Refused(f"SQL syntax error{where}{near}: {first.get('description', exc)}") from None
        raise Refused(f"SQL syntax error: {str(exc).splitlines()[0][:300]}") from None
    if not statements:
        raise Refused("the query is empty: send one SELECT statement")
    if len(statements) > 1:
        raise Refused(f"one statement per request: found {len(statements)} (remove the ';'-separated extras)")
    statement = statements[0]
    if not isinstance(statement, (exp.Select, exp.SetOperation)):
        raise Refused(f"only a SELECT query is allowed: this is a {_statement_kind(statement)} statement")
    return statement


def _check_nodes(statement: exp.Query, views: dict[str, View]) -> None:
    """Refuse, naming it, the first construct that is not a plain read over the views."""
    view_list = ", ".join(views)
    for node in statement.walk():
        if isinstance(node, _NOT_READS):
            raise Refused(f"only a SELECT query is allowed: it contains a {_statement_kind(node)} clause")
        if isinstance(node, (exp.Placeholder, exp.Parameter, exp.SessionParameter)):
            raise Refused(f"query parameters are not supported ({node.sql(dialect='duckdb')}): write the values")
        if isinstance(node, exp.With) and node.args.get("recursive"):
            raise Refused("WITH RECURSIVE is not allowed: a recursive query can run without bound")
        if isinstance(node, exp.Identifier) and str(node.this).lower().startswith(RESERVED_PREFIX):
            raise Refused(f"names starting with {RESERVED_PREFIX!r} are reserved: {node.this!r}")
        if isinstance(node, exp.Table):
            if not isinstance(node.this, exp.Identifier):
                raise Refused(
                    f"table functions are not allowed: {node.this.sql(dialect='duckdb')[:120]} "
                    f"(query the views {view_list})"
                )
            if node.args.get("db") or node.args.get("catalog"):
                raise Refused(
                    f"qualified names are not allowed: {'.'.join(p.name for p in node.parts)} "
                    f"(query the views {view_list})"
                )
        if isinstance(node, exp.Func) and not is_allowed(node):
            raise Refused(
                f"function {function_name(node)}() is not allowed (the allowed functions are listed in "
                "docs/design.md, SQL)"
            )


def _rewrite_tables(statement: exp.Query, views: dict[str, View]) -> list[View]:
    """Point every table reference at a server-made name; return the views used. Refuses a name
    that is neither one of the query's CTEs in scope nor a view."""
    try:
        scopes = list(traverse_scope(statement))
    except (OptimizeError, SqlglotError) as exc:
        raise Refused(f"the query's names cannot be resolved: {exc}") from None
    cte_names: dict[int, str] = {}
    renames: list[tuple[exp.Table, str]] = []
    used: dict[str, View] = {}
    for scope in scopes:
        for table in scope.tables:
            source = scope.sources.get(table.alias_or_name)
            if isinstance(source, Scope) and isinstance(source.expression.parent, exp.CTE):
                cte = source.expression.parent
                new = cte_names.setdefault(id(cte), f"{RESERVED_PREFIX}cte_{len(cte_names)}")
                renames.append((table, new))
                continue
            view = views.get(table.name.lower()) if source is table else None
            if view is None:
                raise Refused(f"unknown table {table.name!r}: only the views {', '.join(views)} may be queried")
            used[view.name] = view
            renames.append((table, view.cte_name))
    for table, new in renames:
        if not table.alias:  # keep `runs.agent`, `t.x` working under the new name
            table.set("alias", exp.TableAlias(this=exp.to_identifier(table.name)))
        table.set("this", exp.to_identifier(new))
    for cte in statement.find_all(exp.CTE):
        new = cte_names.get(id(cte))
        alias = cte.args.get("alias")
        if alias is not None:  # a CTE nothing reads still gets a server name: it can shadow nothing
            alias.set("this", exp.to_identifier(new or f"{RESERVED_PREFIX}cte_{len(cte_names)}_unused"))
    for table in statement.find_all(exp.Table):  # what DuckDB will look up: server-made names only
        if not table.name.startswith(RESERVED_PREFIX):
            raise Refused(f"table {table.name!r} could not be resolved to a view or a CTE of the query")
    return [v for v in views.values() if v.name in used]


def prepare(
    text: str,
    projects: frozenset[str] | None,
    max_rows: int,
    max_query_bytes: int,
    views: dict[str, View] | None = None,
    dialect: str = "duckdb",
) -> Prepared:
    """Check `text` and build what runs. `projects`: the caller's readable projects (None: all).

    The query gets `max_rows + 1` rows at most: the extra row tells the caller it was truncated.
    """
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_query_bytes:
        raise Refused(f"the query is {size} bytes, over the {max_query_bytes}-byte limit (sql_max_query_bytes)")
    views = VIEWS_BY_NAME if views is None else views
    statement = _parse(text)
    _check_nodes(statement, views)
    used = _rewrite_tables(statement, views)
    if dialect == "clickhouse":
        from ingest.sql import clickhouse

        try:
            inner = clickhouse.render(statement)
        except clickhouse.NotRenderable as exc:
            raise Refused(str(exc)) from None
    else:
        try:
            inner = statement.sql(dialect="duckdb", comments=False)
        except SqlglotError as exc:
            raise Refused(f"the query cannot be rendered for DuckDB: {exc}") from None
    ctes, params = [], []
    for view in used:
        cte_sql, cte_params = clickhouse.view_cte(view, projects) if dialect == "clickhouse" else view.cte(projects)
        ctes.append(cte_sql)
        params.extend(cte_params)
    head = f"WITH {', '.join(ctes)} " if ctes else ""
    sql = f"{head}SELECT * FROM ({inner}) AS {QUERY_ALIAS} LIMIT {int(max_rows) + 1}"
    if dialect == "clickhouse":
        sql += clickhouse.SETTINGS
    return Prepared(sql, params, tuple(v.name for v in used), dialect)
