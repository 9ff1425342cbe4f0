"""`/api/queues`: annotation queues, the items people take from them, their labels and results.

Scopes: reading (queues, items, results) is `read`; working a queue (take the next item, submit,
skip) is `annotate`, the scope of people labelling runs; creating, changing, deleting and
backfilling a queue is `admin`, because it decides what everyone labels and a delete drops the
queue's decisions (never the scores they became). Every route works on one project: `project`
(default: the key's) narrowed by what the key may read, so another project's queue is a 404.

Submitting writes the labels as scores through the scores write path (`submit_scores`: checked
against their configs, 422 naming the config on a violation, fsynced before the answer), with
source `human`, author = the person, and an id derived from (project, queue, run, config, person):
a resubmission replaces that person's scores instead of adding more. Then the decision is
recorded and the item settled; a failure between the two leaves the scores stored and the item
open, and submitting again replaces them.

No `from __future__ import annotations`: FastAPI must evaluate the `Depends(...)` hints.
"""

import asyncio
import base64
import binascii
import hashlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, FastAPI, HTTPException, Path, Query
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ingest.api.access import ReadAccess, principal_read_access
from ingest.api.execute import ReadableStore, run_read
from ingest.api.scores import rejected
from ingest.auth import Principal, require_scope
from ingest.queues import fill, items, table
from ingest.queues.model import QueueSpec, UserName
from ingest.queues.service import QueueFiller, utcnow
from ingest.scores.configs import ScoreConfig
from ingest.scores.model import ScoreIn, Source
from ingest.scores.submit import ScoresRejected, configs_for, submit_scores
from ingest.store.work import work_of

TraceId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$", description="The run's trace id (32 lowercase hex).")]
ProjectParam = Annotated[str | None, Query(max_length=200, description="Default: the key's project.")]


def _utc(dt: datetime | None) -> datetime | None:
    return None if dt is None else dt.replace(tzinfo=UTC)


def queue_score_id(project: str, queue: str, trace_id: str, config: str, user: str) -> str:
    """The id of the score a person's label in a queue becomes: the same for a resubmission."""
    key = "\x1f".join(("queue-score-v1", project, queue, trace_id, config, user))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


class Progress(BaseModel):
    total: int
    pending: int
    in_progress: int
    done: int
    skipped: int


class QueueOut(QueueSpec):
    """QUEUE: the definition, where it comes from, and how far it is."""

    model_config = ConfigDict(extra="ignore")

    project: str
    declared: bool = Field(description="Declared in steplens.toml: change it there, not through the API.")
    created_at: datetime
    created_by: str | None
    updated_at: datetime
    watermark: datetime = Field(description="Runs whose rows changed after this are still to be looked at.")
    progress: Progress
    configs: list[ScoreConfig] = Field(description="The score configs of `score_configs` (type, range, labels).")
    last_fill: datetime | None = Field(None, description="When the live pass last ran on this queue.")
    last_error: str | None = Field(None, description="Why the last live pass failed, if it did.")


class QueuesOut(BaseModel):
    queues: list[QueueOut]


class DecisionOut(BaseModel):
    user: str
    decision: Literal["labelled", "skipped"]
    values: dict[str, Any]
    score_ids: dict[str, str] = Field(description="The scores the values became (GET /api/scores).")
    comment: str | None
    decided_at: datetime


class ItemOut(BaseModel):
    """ITEM: a run in a queue. Open the run with GET /api/traces/{trace_id}."""

    trace_id: str
    run_start: datetime | None
    added_at: datetime
    source: Literal["live", "backfill"]
    status: Literal["pending", "in_progress", "done", "skipped"]
    decided_at: datetime | None
    held_by: list[str] = Field(description="Who holds it under an unexpired lease.")
    decisions: list[DecisionOut]

    @classmethod
    def of(cls, item: items.Item) -> "ItemOut":
        return cls(
            trace_id=item.trace_id, run_start=_utc(item.run_start), added_at=_utc(item.added_at),  # type: ignore[arg-type]
            source=item.source, status=item.status, decided_at=_utc(item.decided_at),  # type: ignore[arg-type]
            held_by=item.held_by,
            decisions=[DecisionOut(user=d.user, decision=d.decision, values=d.values, score_ids=d.score_ids,  # type: ignore[arg-type]
                                   comment=d.comment, decided_at=_utc(d.decided_at)) for d in item.decisions],  # type: ignore[arg-type]
        )


class ItemsOut(BaseModel):
    items: list[ItemOut]
    next: str | None = Field(description="Cursor of the next page, or null.")


class NextOut(BaseModel):
    item: ItemOut | None = Field(description="The item now held by `user`; null when nothing is left for them.")
    lease_until: datetime | None
    progress: Progress


class SubmitIn(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    user: UserName
    scores: dict[str, bool | int | float | str] = Field(
        min_length=1, description="Config name -> value, for some or all of the queue's score configs."
    )
    comment: str | None = Field(None, max_length=10_000)


class SkipIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    user: UserName
    comment: str | None = Field(None, max_length=10_000)


class BackfillIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    since: datetime = Field(description="Runs that started at or after this...")
    until: datetime | None = Field(None, description="...and before this (default: now).")

    @model_validator(mode="after")
    def _order(self) -> "BackfillIn":
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is not None and value.tzinfo is not None:
                setattr(self, name, value.astimezone(UTC).replace(tzinfo=None))
        if self.until is not None and self.until <= self.since:
            raise ValueError("until must be after since")
        return self


class BackfillOut(BaseModel):
    examined: int = Field(description="Runs of the range that match the filter.")
    added: int = Field(description="Of those, the sampled ones not in the queue before.")


class PairOut(BaseModel):
    raters: list[str]
    runs: int
    agreement: float
    kappa: float | None = Field(description="Cohen's kappa; null when chance agreement is certain.")


class ConfigResultOut(BaseModel):
    name: str
    runs_with_several_labels: int
    pairs: int
    percent_agreement: float | None
    raters: list[PairOut]


class ResultsOut(BaseModel):
    queue: str
    progress: Progress
    labels: dict[str, dict[str, dict[str, Any]]] = Field(description="trace id -> person -> {config: value}.")
    labelled_by: dict[str, int] = Field(description="Runs each person labelled.")
    skipped_by: dict[str, int] = Field(description="Runs each person skipped.")
    agreement: list[ConfigResultOut]


def encode_cursor(item: ItemOut) -> str:
    raw = json.dumps({"k": "queue_items", "a": item.added_at.replace(tzinfo=None).isoformat(), "t": item.trace_id})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        doc = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if doc.get("k") != "queue_items" or not isinstance(doc.get("t"), str):
            raise ValueError("not a queue items cursor")
        return datetime.fromisoformat(doc["a"]), doc["t"]
    except (binascii.Error, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise HTTPException(400, "cursor is malformed: pass the `next` value of a previous page unchanged") from exc


def build_queues_router(store: Any, filler: QueueFiller, read_access: Callable[..., Any] | None = None,
                        timeout_s: float | None = None, run_filler: bool = True) -> APIRouter:
    """Mount under /api. `store`: the SpanStore. With `run_filler`, the app's lifespan runs `filler`."""
    read_access = read_access or principal_read_access()
    readable: ReadableStore = store
    work = work_of(store)  # the store's own SQL for the queue tables (ingest/store/work.py)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        if run_filler:
            await asyncio.to_thread(filler.start)
        try:
            yield
        finally:
            if run_filler:
                await asyncio.to_thread(filler.stop)

    router = APIRouter(tags=["queues"], lifespan=lifespan)

    async def write(fn: Callable[[Any], Any]) -> Any:
        try:
            return await asyncio.wrap_future(store.run_write(fn))
        except RuntimeError as exc:  # store not started or writer failed
            raise HTTPException(503, f"queue store unavailable: {exc}", headers={"Retry-After": "1"}) from exc

    def project_of(caller: Principal, project: str | None) -> str:
        wanted = project or caller.project
        if not caller.can_read(wanted):
            raise HTTPException(404, f"no project {wanted!r} visible to this key")
        return wanted

    def read_project(access: ReadAccess, caller_project: str, project: str | None) -> str:
        wanted = project or caller_project
        if access.narrow(wanted) == frozenset():
            raise HTTPException(404, f"no project {wanted!r} visible to this key")
        return wanted

    def load(project: str, name: str) -> table.QueueRow:
        row = run_read(readable, lambda cur: work.queue_table.get(cur, project, name), timeout_s)
        if row is None:
            raise HTTPException(404, f"no queue {name!r} in project {project!r}")
        return row

    def configs_of(project: str, names: list[str]) -> list[ScoreConfig]:
        configs = configs_for(store, project)
        return [c for n in names if (c := configs.get(n)) is not None]

    def check_configs(project: str, spec: QueueSpec) -> None:
        configs = configs_for(store, project)
        missing = [n for n in spec.score_configs if configs.get(n) is None]
        if missing:
            raise HTTPException(422, f"no score config named {', '.join(map(repr, missing))} in project "
                                f"{project!r}: declare it first ([[scores]] in steplens.toml or "
                                "POST /api/score-configs), so the page knows its type")

    def out(rows: list[table.QueueRow]) -> list[QueueOut]:
        now = utcnow()
        counts = run_read(readable, lambda cur: work.queue_items.progress(cur, rows, now), timeout_s)
        result = []
        for row in rows:
            status = filler.status.get((row.project, row.name))
            result.append(QueueOut(
                **row.spec.model_dump(), project=row.project, declared=row.declared,
                created_at=_utc(row.created_at), created_by=row.created_by, updated_at=_utc(row.updated_at),
                watermark=_utc(row.watermark), progress=Progress(**counts[(row.project, row.name)]),
                configs=configs_of(row.project, row.spec.score_configs),
                last_fill=_utc(status.last_pass) if status else None, last_error=status.last_error if status else None,
            ))
        return result

    def progress_of(row: table.QueueRow) -> Progress:
        now = utcnow()
        counts = run_read(readable, lambda cur: work.queue_items.progress(cur, [row], now), timeout_s)
        return Progress(**counts[(row.project, row.name)])

    def check_assignee(row: table.QueueRow, user: str) -> None:
        if row.spec.assignees and user not in row.spec.assignees:
            raise HTTPException(403, f"{user!r} is not an assignee of queue {row.name!r} "
                                f"(assignees: {', '.join(row.spec.assignees)})")

    # ---- queues ---------------------------------------------------------------------------------

    @router.get("/queues", response_model=QueuesOut, summary="Annotation queues with their progress (scope read)")
    def list_queues(access: Annotated[ReadAccess, Depends(read_access)], project: ProjectParam = None) -> QueuesOut:
        rows = run_read(readable, lambda cur: work.queue_table.list_queues(cur, access.narrow(project)), timeout_s)
        return QueuesOut(queues=out(rows))

    @router.post("/queues", response_model=QueueOut, status_code=201,
                 summary="Create a queue (scope admin); runs enter it from now on, earlier ones by backfill")
    async def create_queue(body: QueueSpec, caller: Annotated[Principal, Depends(require_scope("admin"))],
                           project: ProjectParam = None) -> QueueOut:
        where = project_of(caller, project)
        await asyncio.to_thread(check_configs, where, body)
        now = utcnow()
        try:
            row = await write(lambda conn: work.queue_table.insert(conn, where, body, caller.name, now))
        except table.QueueExists as exc:
            raise HTTPException(409, str(exc)) from exc
        return out([row])[0]

    @router.get("/queues/{name}", response_model=QueueOut, summary="One queue (scope read)")
    def get_queue(name: str, caller: Annotated[Principal, Depends(require_scope("read"))],
                  access: Annotated[ReadAccess, Depends(read_access)], project: ProjectParam = None) -> QueueOut:
        return out([load(read_project(access, caller.project, project), name)])[0]

    @router.put("/queues/{name}", response_model=QueueOut,
                summary="Change a queue's definition (scope admin); its items and decisions stay")
    async def replace_queue(name: str, body: QueueSpec, caller: Annotated[Principal, Depends(require_scope("admin"))],
                            project: ProjectParam = None) -> QueueOut:
        if body.name != name:
            raise HTTPException(422, f"the body names queue {body.name!r}, the path {name!r}: a queue keeps its name")
        where = project_of(caller, project)
        await asyncio.to_thread(check_configs, where, body)
        now = utcnow()
        try:
            row = await write(lambda conn: work.queue_table.replace(conn, where, body, now))
        except table.DeclaredInConfig as exc:
            raise HTTPException(409, str(exc)) from exc
        if row is None:
            raise HTTPException(404, f"no queue {name!r} in project {where!r}")
        return out([row])[0]

    @router.delete("/queues/{name}", status_code=204,
                   summary="Delete a queue with its items and decisions (scope admin); the scores stay")
    async def delete_queue(name: str, caller: Annotated[Principal, Depends(require_scope("admin"))],
                           project: ProjectParam = None) -> None:
        where = project_of(caller, project)
        try:
            deleted = await write(lambda conn: work.queue_table.delete(conn, where, name))
        except table.DeclaredInConfig as exc:
            raise HTTPException(409, str(exc)) from exc
        if not deleted:
            raise HTTPException(404, f"no queue {name!r} in project {where!r}")

    @router.post("/queues/{name}/backfill", response_model=BackfillOut,
                 summary="Add the sampled matching runs that started in a time range (scope admin)")
    async def backfill_queue(name: str, body: BackfillIn, caller: Annotated[Principal, Depends(require_scope("admin"))],
                             project: ProjectParam = None) -> BackfillOut:
        where = project_of(caller, project)
        now = utcnow()
        until = body.until or now

        def run(conn: Any) -> fill.FillResult | None:
            row = work.queue_table.get(conn, where, name)
            return None if row is None else work.queue_fill.backfill(conn, row, body.since, until, now)

        result = await write(run)
        if result is None:
            raise HTTPException(404, f"no queue {name!r} in project {where!r}")
        return BackfillOut(examined=result.examined, added=result.added)

    # ---- items ----------------------------------------------------------------------------------

    @router.get("/queues/{name}/items", response_model=ItemsOut,
                summary="The queue's runs in the order they entered, with who decided what (scope read)")
    def list_items(
        name: str, caller: Annotated[Principal, Depends(require_scope("read"))],
        access: Annotated[ReadAccess, Depends(read_access)], project: ProjectParam = None,
        status: Annotated[Literal["pending", "in_progress", "done", "skipped"] | None, Query()] = None,
        limit: Annotated[int, Query(ge=1, le=1000)] = 100,
        cursor: Annotated[str | None, Query(max_length=1000)] = None,
    ) -> ItemsOut:
        row = load(read_project(access, caller.project, project), name)
        after = decode_cursor(cursor) if cursor else None
        now = utcnow()
        found = run_read(readable, lambda cur: work.queue_items.list_items(cur, row, now, status, limit + 1, after), timeout_s)
        page = [ItemOut.of(i) for i in found[:limit]]
        return ItemsOut(items=page, next=encode_cursor(page[-1]) if len(found) > limit else None)

    @router.get("/queues/{name}/next", response_model=NextOut,
                summary="Take the next item for `user` (scope annotate; holds it under the queue's lease)")
    async def next_item(
        name: str, user: Annotated[str, Query(min_length=1, max_length=200, pattern=r"^[^\x00-\x1f]+$")],
        caller: Annotated[Principal, Depends(require_scope("annotate"))], project: ProjectParam = None,
    ) -> NextOut:
        where = project_of(caller, project)
        row = load(where, name)
        check_assignee(row, user)
        now = utcnow()
        item = await write(lambda conn: work.queue_items.take_next(conn, row, user, now))
        lease = None
        if item is not None:
            lease = now.replace(tzinfo=UTC) + timedelta(seconds=row.spec.lease_s)
        return NextOut(item=ItemOut.of(item) if item else None, lease_until=lease, progress=progress_of(row))

    @router.post("/queues/{name}/items/{trace_id}/submit", response_model=ItemOut,
                 summary="Label a run: the values become scores (source human), the item is decided (scope annotate)")
    async def submit(
        name: str, trace_id: TraceId, body: SubmitIn,
        caller: Annotated[Principal, Depends(require_scope("annotate"))], project: ProjectParam = None,
    ) -> ItemOut:
        where = project_of(caller, project)
        row = load(where, name)
        check_assignee(row, body.user)
        unknown = sorted(set(body.scores) - set(row.spec.score_configs))
        if unknown:
            raise HTTPException(422, f"queue {name!r} fills {', '.join(row.spec.score_configs)}; not "
                                f"{', '.join(unknown)}")
        now = utcnow()
        try:
            await write(lambda conn: work.queue_items.check_may_decide(conn, row, trace_id, body.user, now))
        except items.NotInQueue as exc:
            raise HTTPException(404, str(exc)) from exc
        except items.NotYours as exc:
            raise HTTPException(409, str(exc)) from exc
        ids = {c: queue_score_id(where, name, trace_id, c, body.user) for c in body.scores}
        scores = [ScoreIn(name=c, value=v, source=Source.HUMAN, author=body.user, trace_id=trace_id,
                          comment=body.comment, score_id=ids[c], metadata={"queue": name})
                  for c, v in body.scores.items()]
        try:
            await submit_scores(store, where, scores)
        except ScoresRejected as exc:
            raise rejected(exc) from exc
        try:
            item = await write(lambda conn: work.queue_items.decide(conn, row, trace_id, body.user, items.LABELLED,
                                                         dict(body.scores), ids, body.comment, utcnow()))
        except items.NotYours as exc:
            raise HTTPException(409, f"{exc} (the scores were stored; submitting again replaces them)") from exc
        return ItemOut.of(item)

    @router.post("/queues/{name}/items/{trace_id}/skip", response_model=ItemOut,
                 summary="Skip a run: no scores, the person's decision is recorded (scope annotate)")
    async def skip(
        name: str, trace_id: TraceId, body: SkipIn,
        caller: Annotated[Principal, Depends(require_scope("annotate"))], project: ProjectParam = None,
    ) -> ItemOut:
        where = project_of(caller, project)
        row = load(where, name)
        check_assignee(row, body.user)
        now = utcnow()
        try:
            item = await write(lambda conn: work.queue_items.decide(conn, row, trace_id, body.user, "skipped", {}, {},
                                                         body.comment, now))
        except items.NotInQueue as exc:
            raise HTTPException(404, str(exc)) from exc
        except items.NotYours as exc:
            raise HTTPException(409, str(exc)) from exc
        return ItemOut.of(item)

    @router.get("/queues/{name}/results", response_model=ResultsOut,
                summary="Who labelled what and how much people agree (scope read)")
    def get_results(name: str, caller: Annotated[Principal, Depends(require_scope("read"))],
                    access: Annotated[ReadAccess, Depends(read_access)], project: ProjectParam = None) -> ResultsOut:
        row = load(read_project(access, caller.project, project), name)
        found = run_read(readable, lambda cur: work.queue_results.results(cur, row), timeout_s)
        return ResultsOut(
            queue=name, progress=progress_of(row), labels=found.labels, labelled_by=found.per_person,
            skipped_by=found.skips,
            agreement=[ConfigResultOut(
                name=c.name, runs_with_several_labels=c.runs, pairs=c.pairs, percent_agreement=c.percent_agreement,
                raters=[PairOut(raters=list(p.raters), runs=p.runs, agreement=p.agreement, kappa=p.kappa)
                        for p in c.raters],
            ) for c in found.configs],
        )

    return router
