"""The server and its normalize workers cap glibc's malloc arenas and put Arrow on the system
allocator (ingest/memory.py), so freed batches go back to the OS instead of inflating peak RSS.
Run in a fresh interpreter: both settings are process-wide."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import pyarrow as pa
from ingest.memory import limit_allocator_arenas, tune_process_memory
tune_process_memory()
print(pa.default_memory_pool().backend_name, limit_allocator_arenas())
"""


def test_tuning_switches_arrow_to_the_system_pool_and_caps_arenas() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    backend, capped = out.stdout.split()
    assert backend == "system"
    assert capped == ("True" if sys.platform.startswith("linux") else capped)
