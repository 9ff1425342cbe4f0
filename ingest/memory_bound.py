"""The documented bound on the server's memory (RSS of the server and its normalize workers together),
and the estimate of a decoded request's size that keeps the in-flight budget honest.

Why an estimate: the in-flight budget (`max_inflight_bytes`) counted the bytes of request bodies,
but a decoded protobuf request of minimal spans holds ~4x its wire size in memory (measured: a
58 MiB body of 1.2M minimal spans is 228 MiB parsed), so four concurrent 60 MiB bodies were 1 GiB
of parsed requests within a 256 MiB budget. The receiver now reserves DECODED_FACTOR x the body
before reading a body whose length it is told, so the budget bounds what decoding will hold.

What the bound adds up (each part bounded by a setting or by a fixed piece size):
- requests being read and decoded: the in-flight budget, or one lone request of the largest body
  with its decoded form when it is alone (a lone request is always admitted);
- accepted-but-unloaded records and their normalized tables: `queue_max_bytes`, plus one piece
  (ingest/store/split.py) over it;
- DuckDB's buffer pool: `duckdb_memory_limit` (when set);
- the interpreters (server and each normalize worker) with their imports, and one piece being
  normalized per worker: FIXED_MIB + WORKER_MIB per worker.
bench/hostile_bodies_bench.py measures the real peak against it (docs/benchmarks.md).
"""

from __future__ import annotations

import re

from ingest.config import Settings

DECODED_FACTOR = 4  # decoded protobuf size / wire size, worst case (minimal spans)
# the server process beyond its budgets: Python, FastAPI, gRPC, DuckDB and pyarrow with their threads
# (~220 MiB idle) and what the allocator keeps of a burst (measured under the hostile-bodies bench)
FIXED_MIB = 450
WORKER_MIB = 200  # one normalize worker process with one piece of 10,000 spans in progress
PIECE_QUEUE_MIB = 64  # one piece's record and normalized table over queue_max_bytes

_UNITS = {"": 1, "B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30}


def _duckdb_bytes(limit: str) -> int:
    m = re.fullmatch(r"\s*([0-9.]+)\s*([A-Za-z]*)\s*", limit or "")
    if not m or m.group(2).upper() not in _UNITS:
        return 0
    return int(float(m.group(1)) * _UNITS[m.group(2).upper()])


def decoded_estimate(wire_bytes: int) -> int:
    """Bytes a body of `wire_bytes` will hold once decoded, beyond the body itself."""
    return DECODED_FACTOR * wire_bytes


def rss_bound_bytes(settings: Settings) -> int:
    """The documented bound on the RSS of the server and all its worker processes together."""
    mib = 1024 * 1024
    lone = settings.max_body_bytes * (1 + DECODED_FACTOR)
    inflight = max(settings.max_inflight_bytes, lone)
    queue = settings.queue_max_bytes + PIECE_QUEUE_MIB * mib
    duckdb = _duckdb_bytes(settings.duckdb_memory_limit)
    workers = settings.normalize_processes * WORKER_MIB * mib
    return inflight + queue + duckdb + FIXED_MIB * mib + workers
