"""Run as a subprocess by the kill -9 test: a SpanStore under concurrent load, printing each
acknowledged request's trace ids (`ACK tid ...`) the moment `submit_blocking` returns.

Ids are deterministic per (seed, request number), and each run first re-sends requests of the
previous seed, so retries across a crash are exercised as well as plain durability.
"""

from __future__ import annotations

import hashlib
import sys
import threading
from pathlib import Path

from ingest.config import Settings
from ingest.store import SpanStore
from tests.ingest.store.otlp_build import agent_run, request

TRACES_PER_REQUEST = 3


def _hex(*parts: object, n: int) -> str:
    return hashlib.sha256(":".join(map(str, parts)).encode()).hexdigest()[:n]


def build(seed: int, number: int):
    spans = []
    tids = []
    for t in range(TRACES_PER_REQUEST):
        tid = _hex(seed, number, t, n=32)
        root, kids = agent_run(trace_id=tid, steps=2)
        new_ids = {s.span_id: _hex(tid, i, n=16) for i, s in enumerate([root, *kids])}
        for s in [root, *kids]:
            s.span_id = new_ids[s.span_id]
            s.parent = new_ids.get(s.parent) if s.parent else None
        spans += [root, *kids]
        tids.append(tid)
    return tids, request(spans)


def main() -> None:
    db, seed = Path(sys.argv[1]), int(sys.argv[2])
    store = SpanStore(Settings(db=db, commit_interval_ms=2, load_batch_spans=3000))
    store.start()
    print("READY", flush=True)
    lock = threading.Lock()
    counter = iter(range(10**9))

    def client() -> None:
        while True:
            with lock:
                n = next(counter)
            # every 4th request re-sends one from the previous run (or this one): a retry
            src_seed, src_n = (seed - 1, n // 4) if n % 4 == 0 and seed > 0 else (seed, n)
            tids, req = build(src_seed, src_n)
            store.submit_blocking("p", req, timeout=30)
            with lock:
                sys.stdout.write("ACK " + " ".join(tids) + "\n")
                sys.stdout.flush()

    threads = [threading.Thread(target=client, daemon=True) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
