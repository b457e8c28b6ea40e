"""What the machine (or the container) gives the service: CPUs and memory, cgroup limits included.

In a container, ``os.sched_getaffinity`` and ``os.cpu_count`` report the host's cores; the CPU limit is the
cgroup's quota (v2: ``cpu.max``, "QUOTA PERIOD" or "max PERIOD"; v1: ``cpu.cfs_quota_us`` / ``cpu.cfs_period_us``)
and the memory limit ``memory.max`` (v2) or ``memory.limit_in_bytes`` (v1). Sizing workers by the host would start
64 workers in a 2-CPU pod, each allowed ``worker_memory_mb`` of address space: far past the pod's memory.
"""

from __future__ import annotations

import math
import os

CGROUP_ROOT = "/sys/fs/cgroup"
_UNLIMITED_BYTES = 1 << 60  # cgroup v1 writes a huge number for "no limit"


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return None


def cgroup_cpus(root: str = CGROUP_ROOT) -> float | None:
    """The CPU quota in CPUs (1.5 for "150000 100000"), or None when there is none."""
    v2 = _read(os.path.join(root, "cpu.max"))
    if v2:
        quota, _, period = v2.partition(" ")
        if quota != "max":
            try:
                return int(quota) / int(period or 100000)
            except (ValueError, ZeroDivisionError):
                return None
        return None
    quota = _read(os.path.join(root, "cpu", "cpu.cfs_quota_us")) or _read(os.path.join(root, "cpu,cpuacct", "cpu.cfs_quota_us"))
    period = _read(os.path.join(root, "cpu", "cpu.cfs_period_us")) or _read(os.path.join(root, "cpu,cpuacct", "cpu.cfs_period_us"))
    try:
        q, p = int(quota), int(period)
    except (TypeError, ValueError):
        return None
    return q / p if q > 0 and p > 0 else None


def cgroup_memory_bytes(root: str = CGROUP_ROOT) -> int | None:
    """The memory limit in bytes, or None when there is none."""
    for path in (os.path.join(root, "memory.max"), os.path.join(root, "memory", "memory.limit_in_bytes")):
        value = _read(path)
        if value is None or value == "max":
            continue
        try:
            n = int(value)
        except ValueError:
            continue
        return n if 0 < n < _UNLIMITED_BYTES else None
    return None


def available_cpus(root: str = CGROUP_ROOT) -> int:
    """Cores this process may use: the affinity mask, lowered by the cgroup quota (rounded up, at least 1)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    quota = cgroup_cpus(root)
    if quota is not None:
        cores = min(cores, max(1, math.ceil(quota)))
    return max(1, cores)


def default_workers(worker_memory_mb: int, root: str = CGROUP_ROOT) -> int:
    """One worker per available CPU, and no more than the memory limit holds at ``worker_memory_mb`` each
    (keeping a quarter of the limit for the server process itself)."""
    workers = available_cpus(root)
    limit = cgroup_memory_bytes(root)
    if limit is not None and worker_memory_mb > 0:
        workers = min(workers, max(1, int(limit * 0.75) // (worker_memory_mb << 20)))
    return workers
