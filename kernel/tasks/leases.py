"""Who holds a task, and when a holder is gone.

A runner that dies (SIGKILL, a crash, a lost machine) cannot say so. Its tasks are found in two
ways: a runner on the same host whose process id no longer exists is gone at once; any other holder
is gone when its lease ran out (it renews every `lease_s / 3` while alive). So a restart on the
same machine resumes at once, and a runner on another machine still cannot steal work from a
live one.
"""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field

from kernel.tasks.model import Task


@dataclass(frozen=True)
class WorkerIdentity:
    """One runner: a fresh id per runner, and the host and process it lives in."""

    worker_id: str = field(default_factory=lambda: "worker_" + uuid.uuid4().hex[:12])
    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)


def process_alive(pid: int) -> bool:
    """Whether a process with this id exists on this host (signal 0 checks, it sends nothing)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


# Runners alive in this process. A holder with this process's id that is not among them is an
# earlier process that had the same id (a container's pid 1 after a restart): gone.
LIVE_IN_THIS_PROCESS: set[str] = set()


def orphan_reason(task: Task, me: WorkerIdentity, now: float) -> str | None:
    """Why `task` (running) has no live runner any more, or None while its runner may be alive."""
    if task.worker_id == me.worker_id or task.worker_id in LIVE_IN_THIS_PROCESS:
        return None
    same_host = task.worker_host == me.host and task.worker_pid is not None
    if same_host and (task.worker_pid == me.pid or not process_alive(task.worker_pid or 0)):
        return f"its runner (process {task.worker_pid} on {task.worker_host}) died during the run"
    if task.lease_until is not None and task.lease_until < now:
        return (f"its runner ({task.worker_id}, process {task.worker_pid} on {task.worker_host}) stopped renewing "
                f"its lease {now - task.lease_until:.0f} s ago")
    return None
