"""Normalization in worker processes: serialized OTLP request in, the spans Arrow table out.

Why a process and not a thread: `spans_table` is pure Python (attribute dicts, JSON, coercions) and
costs ~25 us/span, ~75 % of the server's GIL time under load. In threads it can never use more than
one core, and it competes for the GIL with the event loop and the DuckDB writer's orchestration. A
worker process runs it on another core; the request goes in as the bytes the spool stores anyway,
the table comes back as an Arrow IPC stream (one copy out, zero-copy in).

Errors are data: whatever goes wrong here (a poison request, a dead worker) makes `normalize`
return None and the caller falls back to normalizing in its own thread, where the writer's
retry/dead-letter path takes over. A broken pool is replaced once per failure and logged.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from datetime import datetime
from pathlib import Path

import pyarrow as pa
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

log = logging.getLogger(__name__)

_prices = None  # the worker's price table, loaded once by _init


def _init(price_file: str | None, server_pid: int | None = None) -> None:
    global _prices
    from ingest.memory import tune_process_memory
    from tracer.pricing import PriceTable

    tune_process_memory()

    _prices = PriceTable.load(Path(price_file) if price_file else None)
    # The server's pid comes from the server itself: a worker spawned while its server is being killed
    # would otherwise read ppid 1 here and wait for init to exit, living on as an orphan.
    parent = server_pid if server_pid is not None else os.getppid()
    threading.Thread(target=_exit_with_parent, args=(parent,), name="parent-watch", daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """A server killed with SIGKILL never shuts its pool down, and an idle worker blocked on its call
    queue would live on as an orphan holding ~200 MiB: exit once the parent is gone."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


def _warm() -> None:
    """Submitted at start so the worker is up (imports done) before the first request needs it."""


def _normalize(project: str, payload: bytes, ingested_at: datetime) -> bytes:
    """The table as an Arrow IPC stream (schema metadata included): writing and reading one costs
    ~0.3 us/span, pickling a pa.Table ~1.6 us/span, most of it unpickling on the server's GIL."""
    from ingest.normalize.table import spans_table

    table = spans_table(project, ExportTraceServiceRequest.FromString(payload), ingested_at, prices=_prices)
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _table(stream: bytes) -> pa.Table:
    """The table of a worker's IPC stream (zero-copy: its columns share `stream`'s memory)."""
    return pa.ipc.open_stream(pa.py_buffer(stream)).read_all()


class NormalizePool:
    """`processes` spawned workers (spawn, not fork: the server has DuckDB and event-loop threads)."""

    def __init__(self, processes: int, price_file: Path | None) -> None:
        self._processes = max(1, processes)
        self._price_file = str(price_file) if price_file else None
        self._lock = threading.Lock()
        self._closed = False
        self._executor = self._new_executor()

    def _new_executor(self) -> ProcessPoolExecutor:
        executor = ProcessPoolExecutor(
            self._processes,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_init,
            initargs=(self._price_file, os.getpid()),
        )
        for _ in range(self._processes):
            executor.submit(_warm)
        return executor

    def normalize(self, project: str, payload: bytes, ingested_at: datetime) -> pa.Table | None:
        """The table of one serialized request, or None when the worker could not make it."""
        executor = self._executor
        try:
            return _table(executor.submit(_normalize, project, payload, ingested_at).result())
        except BrokenProcessPool as exc:
            log.error("normalize worker process died (%s); starting a new pool", exc)
            self._replace(executor)
        except RuntimeError as exc:  # submit after shutdown: the store is stopping
            log.warning("normalize pool unavailable: %s", exc)
        except Exception as exc:  # noqa: BLE001 - the caller's fallback reports it with the record
            log.debug("normalize in worker failed: %s", exc)
        return None

    def _replace(self, broken: ProcessPoolExecutor) -> None:
        with self._lock:
            if self._closed or self._executor is not broken:
                return  # another thread already replaced it
            self._executor = self._new_executor()
        broken.shutdown(wait=False, cancel_futures=True)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            executor = self._executor
        executor.shutdown(wait=True, cancel_futures=True)
