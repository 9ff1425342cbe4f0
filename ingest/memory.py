"""Process-level memory settings for the server and its normalize workers.

Why: the server's peak RSS is dominated by allocator retention, not live data. glibc gives every
thread that allocates its own arena (up to 8 per core), and pyarrow's pool keeps freed blocks; both
inflate RSS under bursts. Capping glibc's arenas and using the system pool for Arrow keeps the
process near its live size. Both are best-effort: on a libc without mallopt nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging

_log = logging.getLogger(__name__)

_M_ARENA_MAX = -8  # glibc's mallopt parameter number
ARENA_MAX = 2


def limit_allocator_arenas(arenas: int = ARENA_MAX) -> bool:
    """mallopt(M_ARENA_MAX, arenas) on glibc, the in-process equivalent of MALLOC_ARENA_MAX."""
    try:
        name = ctypes.util.find_library("c")
        if not name:
            return False
        return bool(ctypes.CDLL(name).mallopt(_M_ARENA_MAX, arenas))
    except (OSError, AttributeError):
        _log.debug("mallopt unavailable; allocator arenas left as they are")
        return False


def arrow_returns_memory() -> None:
    """Use the system allocator for Arrow buffers so freed tables go back to malloc (whose arenas
    are capped above) instead of a pool that keeps them."""
    try:
        import pyarrow as pa

        pa.set_memory_pool(pa.system_memory_pool())
    except Exception:  # noqa: BLE001 - an optimisation only
        _log.debug("could not switch pyarrow to the system memory pool", exc_info=True)


def tune_process_memory() -> None:
    limit_allocator_arenas()
    arrow_returns_memory()
