"""Peak memory of the REAL server (all its processes) while hostile bodies arrive (issue 18).

    .venv/bin/python -m bench.hostile_bodies_bench [--bodies 4] [--spans 1200000] [--timeout 900]

What runs: `steplens serve` as a subprocess with its production defaults (2 normalize worker
processes, 64 MiB body limit, 256 MiB in-flight and queue budgets, DuckDB memory_limit 256MB).
`--bodies` clients each post one protobuf body of `--spans` minimal spans (trace id, span id, a
one-letter name, two timestamps: ~58 MiB for 1.2M spans, the most spans a body under the 64 MiB
limit can carry) at the same moment, and retry on 503 after `Retry-After` as an OTLP exporter does.
Every 50 ms the bench sums VmRSS over the server and its child processes (the tree's real
footprint at that moment) and keeps the maximum; it also reports the sum of each process's own
peak (VmHWM), an upper bound. It then waits until every acknowledged span is stored, and prints
the peak, the documented bound (ingest/memory_bound.py, from the server's settings) and their
ratio. Exit 1 when a body got anything but 200 in the end, when spans are missing, or when the
peak is over the bound.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest  # noqa: E402
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans  # noqa: E402

from bench.ingest_bench import ServerProcess, _children  # noqa: E402
from ingest.config import Settings  # noqa: E402
from ingest.memory_bound import rss_bound_bytes  # noqa: E402

MIB = 1024 * 1024
PROTOBUF = {"content-type": "application/x-protobuf"}


def minimal_body(spans: int, offset: int) -> bytes:
    ss = ScopeSpans()
    base = 1_764_000_000_000_000_000 + offset * 10**12
    add = ss.spans.add
    for i in range(spans):
        s = add()
        s.trace_id = (offset << 40 | 1 + i // 100).to_bytes(16, "big")
        s.span_id = (offset << 40 | 1 + i).to_bytes(8, "big")
        s.name = "s"
        s.start_time_unix_nano = base + i * 1000
        s.end_time_unix_nano = base + i * 1000 + 500
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ss])]).SerializeToString()


def tree_rss_kb(pid: int) -> int:
    total = 0
    for p in [pid, *_children(pid)]:
        try:
            m = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{p}/status").read_text())
        except OSError:
            continue
        if m:
            total += int(m.group(1))
    return total


async def send(client: httpx.AsyncClient, url: str, body: bytes, deadline: float, log: list[str]) -> int:
    tries = 0
    while True:
        tries += 1
        try:
            r = await client.post(url + "/v1/traces", content=body, headers=PROTOBUF, timeout=600)
        except httpx.HTTPError as exc:
            log.append(f"transport error {type(exc).__name__}")
            await asyncio.sleep(1)
            continue
        if r.status_code != 503 or time.monotonic() > deadline:
            log.append(f"{r.status_code} after {tries} tries")
            return r.status_code
        await asyncio.sleep(float(r.headers.get("retry-after", "1")))


async def run(args: argparse.Namespace, server: ServerProcess, bodies: list[bytes]) -> tuple[list[int], list[str], float, int]:
    peak = [0]
    stop = asyncio.Event()

    async def sample() -> None:
        while not stop.is_set():
            peak[0] = max(peak[0], tree_rss_kb(server.proc.pid))
            server.sample_rss()
            await asyncio.sleep(0.05)

    sampler = asyncio.create_task(sample())
    log: list[str] = []
    t0 = time.monotonic()
    async with httpx.AsyncClient() as client:
        codes = await asyncio.gather(*(send(client, server.url, b, t0 + args.timeout, log) for b in bodies))
        expected = args.bodies * args.spans
        while time.monotonic() - t0 < args.timeout and await server.stored(client) < expected:
            await asyncio.sleep(0.5)
        stored = await server.stored(client)
    stop.set()
    await sampler
    log.append(f"stored {stored:,} of {args.bodies * args.spans:,} spans in {time.monotonic() - t0:.0f} s")
    return list(codes), log, peak[0] / 1024, stored


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bodies", type=int, default=4)
    ap.add_argument("--spans", type=int, default=1_200_000)
    ap.add_argument("--timeout", type=float, default=900.0)
    args = ap.parse_args()
    t = time.perf_counter()
    bodies = [minimal_body(args.spans, k + 1) for k in range(args.bodies)]
    print(f"built {args.bodies} bodies of {args.spans:,} spans, {len(bodies[0]) / MIB:.1f} MiB each, "
          f"in {time.perf_counter() - t:.0f} s", flush=True)
    bound_mib = rss_bound_bytes(Settings()) / MIB
    with tempfile.TemporaryDirectory(prefix="steplens-hostile-bench-") as tmp:
        server = ServerProcess("steplens", Path(tmp))
        try:
            idle_mib = tree_rss_kb(server.proc.pid) / 1024
            codes, log, peak_mib, stored = asyncio.run(run(args, server, bodies))
        finally:
            server.stop()
    print(f"answers: {codes}; " + "; ".join(log))
    print(f"server RSS (server + normalize workers): idle {idle_mib:,.0f} MiB, peak {peak_mib:,.0f} MiB "
          f"(sum of per-process peaks {server.peak_rss_mib:,.0f} MiB: {server.rss_breakdown()})")
    print(f"documented bound {bound_mib:,.0f} MiB; peak / bound = {peak_mib / bound_mib:.2f}")
    ok = all(c == 200 for c in codes) and stored == args.bodies * args.spans and peak_mib <= bound_mib
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
