"""`GET /api/replanning`: how plan-and-execute runs replan, what stops them, and what it costs.

Why no `from __future__ import annotations`: FastAPI must resolve the route's `Depends(read_access)`
annotation at definition time, and `read_access` is a local of `add_replanning_routes`.
"""

from collections.abc import Callable
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from ingest.api.access import ReadAccess
from ingest.api.examples import pick_examples
from ingest.api.execute import ReadableStore, run_read
from ingest.api.replanning_models import (
    Exhausted,
    ReplanCost,
    ReplanGroup,
    Replanning,
    ReplanningParams,
    RunReplanCost,
    TripRow,
    VersionsRow,
)
from ingest.queries.replanning import ReplanningRows
from ingest.store.backend import queries_of
from tracer.conventions import ReplanVerdict


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole > 0 else None


def _group(row: dict[str, Any]) -> ReplanGroup:
    return ReplanGroup(
        **{k: v for k, v in row.items() if k != "examples"},
        examples=pick_examples(row["examples"]),
    )


def replanning_answer(rows: ReplanningRows) -> Replanning:
    """The API answer from the query rows: examples deduplicated, shares computed once here."""
    t = rows.totals
    groups = [_group(r) for r in rows.by_granularity]
    trips = [
        TripRow(verdict=r["verdict"], trips=int(r["trips"]), runs=int(r["runs"]), examples=pick_examples(r["examples"]))
        for r in rows.trips
    ]
    oscillation = next((x for x in trips if x.verdict == ReplanVerdict.OSCILLATION.value), None)
    ex = rows.exhausted
    runs_cost = float(t["runs_cost_usd"])
    return Replanning(
        plan_runs=int(t["plan_runs"]),
        runs_with_replans=int(t["runs_with_replans"]),
        replans=sum(g.replans for g in groups),
        admitted=sum(g.admitted for g in groups),
        refused=sum(g.refused for g in groups),
        unusable=sum(g.unusable for g in groups),
        oscillations=oscillation.trips if oscillation else 0,
        oscillation_examples=oscillation.examples if oscillation else [],
        by_granularity=groups,
        by_cause=[_group(r) for r in rows.by_cause],
        trips=trips,
        exhausted=Exhausted(
            runs=int(ex["runs"]),
            examples=pick_examples(ex["examples"]),
            without_replan_span=int(ex["without_replan_span"]),
            without_replan_span_examples=pick_examples(ex["without_replan_span_examples"]),
        ),
        versions=[
            VersionsRow(versions=int(r["versions"]), runs=int(r["runs"]), examples=pick_examples(r["examples"]))
            for r in rows.versions
        ],
        cost=ReplanCost(
            replan_llm_calls=int(t["replan_llm_calls"]),
            replan_input_tokens=int(t["replan_input_tokens"]),
            replan_output_tokens=int(t["replan_output_tokens"]),
            replan_cost_usd=float(t["replan_cost_usd"]),
            plan_cost_usd=float(t["plan_cost_usd"]),
            reexecution_cost_usd=float(t["reexecution_cost_usd"]),
            runs_cost_usd=runs_cost,
            replan_share=_share(float(t["replan_cost_usd"]), runs_cost),
            reexecution_share=_share(float(t["reexecution_cost_usd"]), runs_cost),
            examples=pick_examples(t["examples"]),
        ),
        runs=[RunReplanCost(**r) for r in rows.runs],
    )


def add_replanning_routes(
    router: APIRouter, store: ReadableStore, read_access: Callable[..., Any], timeout_s: float | None
) -> None:
    @router.get("/replanning", response_model=Replanning, summary="Replans by granularity and cause, trips, cost")
    def get_replanning(
        params: Annotated[ReplanningParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> Replanning:
        filters = params.to_filters(access)
        return replanning_answer(run_read(store, lambda cur: queries_of(store).replanning.replanning_rows(cur, filters), timeout_s))
