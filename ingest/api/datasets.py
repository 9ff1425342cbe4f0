"""`/api/datasets`: save stored runs as a dataset of eval cases, list datasets, download one as JSONL.

- `POST /api/datasets` (scope `annotate`; `admin` has it): `DatasetIn` (ingest/datasets/model.py):
  a runs filter, trace ids, or an annotation queue's labelled runs; the runs are those the key may
  read, the queue and the dataset are the key's project's. 409 when the name
  exists and `replace` is not set; the answer lists the runs skipped and why.
- `GET /api/datasets` (scope `read`): the datasets of the readable projects.
- `GET /api/datasets/{name}` (scope `read`): the cases as JSONL (`application/x-ndjson`), the file
  `steplens eval run` takes; `project` picks one when several readable projects have the name.

No `from __future__ import annotations`: FastAPI must evaluate the `Depends(...)` hints.
"""

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query
from fastapi.responses import Response

from ingest.api.access import ReadAccess, principal_read_access
from ingest.api.execute import ReadableStore, run_read
from ingest.api.runs import run_filters
from ingest.auth import Principal, require_scope
from ingest.datasets import store as dataset_store
from ingest.datasets.build import QueueNotFound, cases_of, selected_trace_ids
from ingest.datasets.model import DatasetCreated, DatasetIn, DatasetInfo, DatasetList
from ingest.store.work import work_of

JSONL = "application/x-ndjson"
# Runs turned into cases per read: each read has the query time limit to itself (a case costs a few
# small queries; 1000 runs in one read ran past the 10 s limit on a loaded machine).
RUNS_PER_READ = 25


def build_datasets_router(store: Any, read_access: Callable[..., Any] | None = None,
                          timeout_s: float | None = None) -> APIRouter:
    """Mount under /api. `store`: the SpanStore (read for the runs, run_write for the dataset)."""
    read_access = read_access or principal_read_access()
    readable: ReadableStore = store
    work = work_of(store)  # the store's own SQL for the dataset tables
    router = APIRouter(tags=["datasets"])

    @router.post("/datasets", response_model=DatasetCreated,
                 summary="Save runs (a runs filter or trace ids) as a dataset of eval cases (scope annotate)")
    async def post_dataset(
        body: DatasetIn, caller: Annotated[Principal, Depends(require_scope("annotate"))],
        access: Annotated[ReadAccess, Depends(read_access)],
    ) -> DatasetCreated:
        narrowed = access.narrow(body.filter.project if body.filter else None)
        filters = run_filters(body.filter, narrowed) if body.filter else None
        try:
            trace_ids = await asyncio.to_thread(
                run_read, readable, lambda cur: selected_trace_ids(cur, body, filters, caller.project, store), timeout_s
            )
        except QueueNotFound as exc:
            raise HTTPException(404, str(exc)) from None
        cases, skipped = [], []
        for i in range(0, len(trace_ids), RUNS_PER_READ):
            chunk = trace_ids[i:i + RUNS_PER_READ]
            more, passed = await asyncio.to_thread(
                run_read, readable, lambda cur, chunk=chunk: cases_of(cur, chunk, body, narrowed, store), timeout_s
            )
            cases += more
            skipped += passed
        info = DatasetInfo(project=caller.project, name=body.name, description=body.description, cases=len(cases),
                           created_at=datetime.now(UTC).replace(tzinfo=None), created_by=caller.name)
        selection = body.model_dump(mode="json", exclude={"replace", "description", "name"}, exclude_none=True)
        try:
            await asyncio.wrap_future(
                store.run_write(lambda conn: work.datasets.save(conn, info, selection, cases, body.replace))
            )
        except dataset_store.DatasetExists as exc:
            raise HTTPException(409, str(exc)) from None
        except RuntimeError as exc:
            raise HTTPException(503, f"datasets unavailable: {exc}", headers={"Retry-After": "1"}) from exc
        return DatasetCreated(**info.model_dump(), skipped=skipped)

    @router.get("/datasets", response_model=DatasetList, summary="Datasets of your projects (scope read)")
    def get_datasets(access: Annotated[ReadAccess, Depends(read_access)]) -> DatasetList:
        return DatasetList(datasets=run_read(readable, lambda cur: work.datasets.list_datasets(cur, access.projects),
                                             timeout_s))

    @router.get("/datasets/{name}", summary="A dataset's cases as JSONL, the file `steplens eval run` reads (scope read)",
                response_class=Response, responses={200: {"content": {JSONL: {}}}})
    def get_dataset(
        name: str, access: Annotated[ReadAccess, Depends(read_access)],
        project: Annotated[str | None, Query(max_length=512)] = None,
    ) -> Response:
        def query(cur: Any) -> tuple[list[DatasetInfo], list[str]]:
            found = work.datasets.find(cur, access.narrow(project), name)
            return found, (work.datasets.case_lines(cur, found[0].project, name) if len(found) == 1 else [])

        found, lines = run_read(readable, query, timeout_s)
        if not found:
            raise HTTPException(404, f"no dataset {name!r} in your projects")
        if len(found) > 1:
            raise HTTPException(409, f"dataset {name!r} exists in projects {', '.join(d.project for d in found)}: "
                                     "name one with ?project=")
        body = "".join(line + "\n" for line in lines)
        return Response(body, media_type=JSONL,
                        headers={"Content-Disposition": f'attachment; filename="{name}.jsonl"'})

    return router
