"""`/api/scores` and `/api/score-configs`: writing and reading scores (design.md §4).

- `POST /api/scores` (scope `annotate`; `admin` has it): one score, a list, or `{"scores": [...]}`,
  at most 1,000 (413 beyond); every score is checked against its config first and one violation
  refuses the batch (422 listing each `loc` = body.scores.<i>.<field> and its reason). A 200 means
  the scores are fsynced in the spool (ingest/scores/submit.py), like a 200 on /v1/traces. The
  scores belong to the key's project, whatever trace they name.
- `GET /api/scores` (scope `read`): filters, newest first, keyset cursor like /api/runs.
- `GET /api/score-configs` (scope `read`) and `POST /api/score-configs` (scope `admin`).

No `from __future__ import annotations`: FastAPI must evaluate the `Depends(...)` hints.
"""

import asyncio
import base64
import binascii
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from starlette.requests import ClientDisconnect

from ingest.api.access import ReadAccess, principal_read_access
from ingest.api.execute import ReadableStore, run_read
from ingest.api.params import TimeParam, parse_modes
from ingest.api.score_models import ScoreOut
from ingest.auth import Principal, require_scope
from ingest.errors import Malformed, TooLarge
from ingest.queries.scores import ScoreFilters, ScoreKey
from ingest.scores.configs import ScoreConfig, file_configs_for
from ingest.scores.model import ScoreIn, Source
from ingest.scores.submit import MAX_BATCH, ScoresRejected, submit_scores
from ingest.store.backend import queries_of
from ingest.store.work import work_of

# A batch of MAX_BATCH scores with long comments and metadata fits well within this.
MAX_BODY_BYTES = 32 * 1024 * 1024
_SCORES = TypeAdapter(list[ScoreIn])
Text = Annotated[str | None, Field(max_length=512)]


class ScoresAccepted(BaseModel):
    accepted: int = Field(description="Scores durably accepted (a replaced or older duplicate id still counts).")
    score_ids: list[str] = Field(description="Their ids, in the order sent: send one again to replace that score.")


class ScoresPage(BaseModel):
    scores: list[ScoreOut]
    next: str | None


class ScoresParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    project: Text = Field(None, description="Only this project (narrows what your key reads, never widens).")
    trace_id: Text = None
    span_id: Text = None
    session_id: Text = None
    name: Text = None
    source: Source | None = None
    author: Text = None
    agent: Text = Field(None, description="Scores of this agent's runs.")
    version: Text = Field(None, description="Scores of runs of this version.")
    mode: Text = Field(None, description="Run modes (as elsewhere); default: every score, run or not.")
    since: TimeParam = Field(None, description="Scored at or after: ISO 8601 or relative (24h, 7d).")
    until: TimeParam = Field(None, description="Scored before.")
    limit: int = Field(100, ge=1, le=1000)
    cursor: str | None = Field(None, max_length=4096, description="`next` of the previous page.")

    @field_validator("mode")
    @classmethod
    def _mode(cls, v: str | None) -> str | None:
        if v is not None:
            parse_modes(v)
        return v

    @field_validator("trace_id", "span_id")
    @classmethod
    def _lower(cls, v: str | None) -> str | None:
        return v.strip().lower() if v else v


class ConfigOut(ScoreConfig):
    project: str | None = Field(None, exclude=True)  # the answer is the asked project's configs
    origin: Literal["file", "api"] = Field(description="steplens.toml `[[scores]]`, or POST /api/score-configs.")


class ConfigsOut(BaseModel):
    configs: list[ConfigOut]


class ConfigIn(ScoreConfig):
    """A config declared through the API: always for the key's project."""

    @field_validator("project")
    @classmethod
    def _no_project(cls, v: str | None) -> None:
        if v is not None:
            raise ValueError("a config declared through the API belongs to the key's project: leave project out")
        return None


def encode_cursor(key: ScoreKey) -> str:
    raw = json.dumps({"k": "scores", "c": key.created_at.isoformat(), "p": key.project, "i": key.score_id})
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> ScoreKey:
    try:
        doc = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        if not isinstance(doc, dict) or doc.get("k") != "scores":
            raise ValueError("not a scores cursor")
        if not isinstance(doc["p"], str) or not isinstance(doc["i"], str):
            raise ValueError("bad ids")
        return ScoreKey(datetime.fromisoformat(doc["c"]), doc["p"], doc["i"])
    except (binascii.Error, ValueError, KeyError, TypeError) as exc:
        raise HTTPException(400, "cursor is malformed: pass the `next` value of a previous page unchanged") from exc


async def _read_json(request: Request) -> Any:
    declared = request.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise TooLarge(f"body of {declared} bytes is over the {MAX_BODY_BYTES} byte limit of /api/scores")
    body = bytearray()
    try:
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                raise TooLarge(f"body is over the {MAX_BODY_BYTES} byte limit of /api/scores")
    except ClientDisconnect:
        raise Malformed("client disconnected before sending the whole body") from None
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise Malformed(f"body is not JSON: {exc}") from None


def scores_of(doc: Any) -> list[ScoreIn]:
    """The scores of a POST body: one object, a list, or {"scores": [...]} (413 over MAX_BATCH)."""
    items = doc.get("scores") if isinstance(doc, dict) and "scores" in doc else doc
    if isinstance(items, dict):
        items = [items]
    if not isinstance(items, list):
        raise RequestValidationError([{"type": "list_type", "loc": ("body", "scores"),
                                       "msg": "send a score object, a list of them, or {\"scores\": [...]}"}])
    if len(items) > MAX_BATCH:
        raise TooLarge(f"{len(items)} scores in one request; at most {MAX_BATCH}: split the batch")
    try:
        return _SCORES.validate_python(items)
    except ValidationError as exc:
        # no `input`/`ctx`: they echo the client's values (inf is not even JSON) and can be big
        errors = [{"type": e["type"], "loc": ("body", "scores", *e["loc"]), "msg": e["msg"]}
                  for e in exc.errors(include_url=False)]
        raise RequestValidationError(errors) from None


def rejected(exc: ScoresRejected) -> RequestValidationError:
    return RequestValidationError([
        {"type": "score_config", "loc": ("body", "scores", v.index, v.field), "msg": v.reason}
        for v in exc.violations
    ])


def build_scores_router(store: Any, read_access: Callable[..., Any] | None = None,
                        timeout_s: float | None = None) -> APIRouter:
    """Mount under /api. `store`: the SpanStore (read, run_write, submit_score_payload, settings)."""
    read_access = read_access or principal_read_access()
    readable: ReadableStore = store
    router = APIRouter(tags=["scores"])

    @router.post("/scores", response_model=ScoresAccepted,
                 summary="Store scores durably (scope annotate; one, a list or {scores: [...]}, at most 1000)")
    async def post_scores(
        request: Request, caller: Annotated[Principal, Depends(require_scope("annotate"))]
    ) -> ScoresAccepted:
        scores = scores_of(await _read_json(request))
        try:
            stored = await submit_scores(store, caller.project, scores)
        except ScoresRejected as exc:
            raise rejected(exc) from None
        return ScoresAccepted(accepted=len(stored), score_ids=[s.score_id for s in stored])

    @router.get("/scores", response_model=ScoresPage, summary="Scores, newest first (scope read; keyset paging)")
    def get_scores(
        params: Annotated[ScoresParams, Query()], access: Annotated[ReadAccess, Depends(read_access)]
    ) -> ScoresPage:
        after = decode_cursor(params.cursor) if params.cursor else None
        filters = ScoreFilters(
            projects=access.narrow(params.project), trace_id=params.trace_id, span_id=params.span_id,
            session_id=params.session_id, name=params.name,
            source=params.source.value if params.source else None, author=params.author, agent=params.agent,
            version=params.version, modes=parse_modes(params.mode) if params.mode else None,
            since=params.since, until=params.until,
        )
        page = run_read(readable, lambda cur: queries_of(store).scores.list_scores(cur, filters, params.limit, after), timeout_s)
        nxt = encode_cursor(page.next_key) if page.next_key else None
        return ScoresPage(scores=[ScoreOut.model_validate(r) for r in page.rows], next=nxt)

    def configs_of(project: str) -> list[ConfigOut]:
        file = file_configs_for(store.settings.scores, project)
        names = {c.name for c in file}
        declared = run_read(readable, lambda cur: queries_of(store).scores.api_configs(cur, project), timeout_s)
        out = [ConfigOut(**c.model_dump(exclude={"project"}), origin="file") for c in file]
        out += [ConfigOut(**c.model_dump(exclude={"project"}), origin="api") for c in declared if c.name not in names]
        return sorted(out, key=lambda c: c.name)

    @router.get("/score-configs", response_model=ConfigsOut, summary="Score configs of your key's project (scope read)")
    def get_configs(
        caller: Annotated[Principal, Depends(require_scope("read"))],
        project: Annotated[str | None, Query(max_length=512)] = None,
    ) -> ConfigsOut:
        if project is not None and not caller.can_read(project):
            return ConfigsOut(configs=[])
        return ConfigsOut(configs=configs_of(project or caller.project))

    @router.post("/score-configs", response_model=ConfigOut,
                 summary="Declare or redeclare a score config for your key's project (scope admin)")
    async def post_config(
        body: ConfigIn, caller: Annotated[Principal, Depends(require_scope("admin"))]
    ) -> ConfigOut:
        if body.name in {c.name for c in file_configs_for(store.settings.scores, caller.project)}:
            raise HTTPException(409, f"score config {body.name!r} is declared in steplens.toml; change it there")
        config = ScoreConfig(**body.model_dump())
        now = datetime.now(UTC).replace(tzinfo=None)
        try:
            await asyncio.wrap_future(
                store.run_write(lambda conn: work_of(store).score_configs.upsert(conn, caller.project, config, now, caller.name))
            )
        except RuntimeError as exc:
            raise HTTPException(503, f"score configs unavailable: {exc}", headers={"Retry-After": "1"}) from exc
        return ConfigOut(**config.model_dump(exclude={"project"}), origin="api")

    return router
