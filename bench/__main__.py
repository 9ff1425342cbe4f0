"""Run every benchmark module `bench/*_bench.py` that defines `main()` (what `make bench` does).

    python -m bench                 # all of them, in name order
    python -m bench tracer ingest   # only modules whose name contains one of the words

Each module gets a clean `sys.argv` (its defaults); run a module directly for its own options.
A benchmark that fails is reported and the others still run; the exit code says if any failed.
"""

from __future__ import annotations

import importlib
import sys
import time
import traceback
from pathlib import Path


def discover(filters: list[str]) -> list[str]:
    here = Path(__file__).resolve().parent
    names = sorted(p.stem for p in here.glob("*_bench.py"))
    return [n for n in names if not filters or any(f in n for f in filters)]


def main(argv: list[str] | None = None) -> int:
    filters = list(sys.argv[1:] if argv is None else argv)
    failed: list[str] = []
    modules = discover(filters)
    if not modules:
        print(f"no benchmark matches {filters}", file=sys.stderr)
        return 2
    for name in modules:
        module = importlib.import_module(f"bench.{name}")
        entry = getattr(module, "main", None)
        if not callable(entry):
            continue
        print(f"=== bench.{name} ===", flush=True)
        saved, sys.argv = sys.argv, [f"bench.{name}"]
        t0 = time.perf_counter()
        try:
            code = entry()
        except Exception:
            traceback.print_exc()
            code = 1
        finally:
            sys.argv = saved
        print(f"=== bench.{name}: exit {code or 0} in {time.perf_counter() - t0:.1f} s ===\n", flush=True)
        if code:
            failed.append(name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
