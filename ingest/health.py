"""Liveness, readiness and self-metrics routes.

Why /readyz is separate from /healthz: the process can be up while the store is still replaying
its spool; orchestrators should not send traffic (and load balancers should not mark it dead)
in that window. /healthz is the only route open without a key, and it reveals nothing but the
node's role (`steplens serve --role`); /readyz also lists the singleton jobs running in this process
(ingest/jobs.py), so a split deployment can be checked to run each exactly once.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ingest.auth import require_scope
from ingest.metrics import IngestMetrics
from ingest.otlp.export import SpanSink


def health_router(store: SpanSink, metrics: IngestMetrics, role: str = "all") -> APIRouter:
    router = APIRouter(tags=["health"])

    @router.get("/healthz")
    async def healthz() -> dict[str, str]:
        return {"status": "ok", "role": role}

    @router.get("/readyz")
    async def readyz(request: Request) -> JSONResponse:
        jobs = getattr(request.app.state, "jobs", None)
        node: dict[str, object] = {"role": role, "jobs": jobs.running() if jobs is not None else []}
        if jobs is not None and jobs.started and jobs.unavailable:  # jobs this store cannot run yet, why
            node["jobs_unavailable"] = dict(jobs.unavailable)
        try:
            ready = bool(store.ready())
            # a store that can say why (SpanStore: starting, fatal error, disk full) does
            explain = getattr(store, "not_ready_reason", None)
            reason = (explain() if explain is not None and not ready else None) or "store is starting or stopped"
        except Exception as exc:  # a failing probe is "not ready", with the reason, never a 500
            return JSONResponse({"status": "not ready", "reason": type(exc).__name__, **node}, status_code=503)
        if ready:
            return JSONResponse({"status": "ready", **node})
        return JSONResponse({"status": "not ready", "reason": reason, **node}, status_code=503)

    @router.get("/metrics", dependencies=[Depends(require_scope("operator"))])
    async def prometheus_metrics() -> Response:
        return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)

    return router
