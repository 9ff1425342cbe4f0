"""`GET /api/cost`: cost attribution grouped by one dimension, as JSON or CSV.

Grouped by tool, a row's cost is the tool's three-part cost (direct + decision + carry) and its
tokens are the decision share of the choosing calls' tokens plus the re-sent observation tokens;
rows of other groupings are plain sums of LLM usage (tool prices included in run-level rows).
"""

import csv
import io
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Response

from ingest.api.access import ReadAccess
from ingest.api.analytics_models import CostReport, CostRow
from ingest.api.analytics_params import CostParams
from ingest.api.examples import pick_examples
from ingest.api.execute import ReadableStore, run_read
from ingest.api.pricing import price_table_info
from ingest.api.tools import tool_stats
from ingest.queries.filters import CommonFilters
from ingest.store.backend import DUCKDB_QUERIES, QueryNamespace, queries_of
from tracer.pricing import PriceTable

CSV_COLUMNS = (
    "key", "runs", "llm_calls", "input_tokens", "output_tokens", "cost_usd", "direct", "decision", "carry", "examples",
)  # fmt: skip


def _tool_cost_rows(cur: Any, filters: CommonFilters, prices: PriceTable, queries: QueryNamespace = DUCKDB_QUERIES) -> list[CostRow]:
    rows = queries.tools.tool_rows(cur, filters)
    raw = {s["tool"]: s for s in rows.stats}
    out = []
    for t in tool_stats(rows, prices):
        s = raw[t.tool]
        out.append(
            CostRow(
                key=t.tool,
                runs=t.runs,
                llm_calls=round(float(s["decision_llm_calls"])),
                input_tokens=round(float(s["decision_input_tokens"])) + t.carry_tokens,
                output_tokens=round(float(s["decision_output_tokens"])),
                cost_usd=t.cost.total,
                examples=t.examples,
                direct=t.cost.direct,
                decision=t.cost.decision,
                carry=t.cost.carry,
            )
        )
    return out


def cost_report(
    cur: Any, filters: CommonFilters, group_by: str, prices: PriceTable, queries: QueryNamespace = DUCKDB_QUERIES
) -> CostReport:
    if group_by == "tool":
        rows = _tool_cost_rows(cur, filters, prices, queries)
    else:
        rows = [
            CostRow(
                key=None if r["key"] is None else str(r["key"]),
                runs=int(r["runs"]),
                llm_calls=int(r["llm_calls"]),
                input_tokens=int(r["input_tokens"]),
                output_tokens=int(r["output_tokens"]),
                cost_usd=float(r["cost_usd"]),
                examples=pick_examples(r["example_candidates"]),
            )
            for r in queries.cost.cost_rows(cur, filters, group_by)
        ]
    return CostReport(
        group_by=group_by,
        rows=rows,
        total_cost_usd=sum(r.cost_usd for r in rows),
        price_table=price_table_info(prices),
    )


def to_csv(report: CostReport) -> str:
    """One header row, then one row per group; examples space-separated; empty cells for nulls."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for r in report.rows:
        values = r.model_dump()
        values["examples"] = " ".join(r.examples)
        writer.writerow(["" if values[c] is None else values[c] for c in CSV_COLUMNS])
    return buffer.getvalue()


def add_cost_routes(
    router: APIRouter,
    store: ReadableStore,
    read_access: Callable[..., Any],
    timeout_s: float | None,
    prices: PriceTable,
) -> None:
    @router.get(
        "/cost",
        response_model=CostReport,
        summary="Cost attribution grouped by model, provider, tool, agent, version, project, user, conversation or day",
        responses={200: {"content": {"text/csv": {}}, "description": "JSON, or CSV with format=csv"}},
    )
    def get_cost(params: Annotated[CostParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]) -> Any:
        filters = params.to_filters(access)
        report = run_read(store, lambda cur: cost_report(cur, filters, params.group_by, prices, queries_of(store)), timeout_s)
        if params.format == "csv":
            filename = f"steplens-cost-by-{params.group_by}.csv"
            return Response(
                to_csv(report),
                media_type="text/csv; charset=utf-8",
                headers={"Content-Disposition": f'attachment; filename="{filename}"'},
            )
        return report
