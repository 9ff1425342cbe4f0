"""A real, small filesystem for disk-full tests: a tmpfs mounted under the test's tmp dir.

Why a tmpfs and not a mock: ENOSPC must come from the kernel, at the exact write DuckDB or the spool
makes, with the real errno and message. Mounting needs root (CAP_SYS_ADMIN); without it the test is
skipped with that reason. The filesystem is unmounted (lazily if still busy) when the block ends.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_tmpfs(directory: Path, size_bytes: int) -> Iterator[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_bytes},mode=0700", "tmpfs", str(directory)],
        capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs for a real disk-full test (needs root): {done.stderr.strip()}")
    try:
        yield directory
    finally:
        if subprocess.run(["umount", str(directory)], capture_output=True, check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(directory)], capture_output=True, check=False)


def free_bytes(directory: Path) -> int:
    st = os.statvfs(directory)
    return st.f_bavail * st.f_frsize


def fill(directory: Path, leave_bytes: int = 0) -> Path:
    """Write a filler file until about `leave_bytes` are free (0: the disk is full); delete it to free."""
    filler = directory / "filler"
    chunk = b"\0" * (1024 * 1024)
    with open(filler, "ab") as f:
        while (room := free_bytes(directory) - leave_bytes) > 0:
            try:
                f.write(chunk[: min(len(chunk), room)])
                f.flush()
            except OSError:
                break
    return filler
