"""The service sizes its workers by what the container allows (cgroup v1 and v2 CPU quota and memory limit),
not by the host's cores, and refuses to start when uvicorn's internals that the header timeout hooks into are
gone (issue 35). The cgroup files are written under a temporary root, as the kernel lays them out."""

from __future__ import annotations

import os

import pytest
from uvicorn.protocols.http.h11_impl import H11Protocol

from server.header_timeout import UvicornChanged, check_uvicorn
from server.resources import available_cpus, cgroup_cpus, cgroup_memory_bytes, default_workers

HOST = len(os.sched_getaffinity(0))


def _write(root, rel, text):
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def test_cgroup_v2_cpu_quota_and_memory(tmp_path):
    _write(tmp_path, "cpu.max", "150000 100000\n")
    _write(tmp_path, "memory.max", str(3 << 30) + "\n")
    assert cgroup_cpus(str(tmp_path)) == 1.5
    assert available_cpus(str(tmp_path)) == min(HOST, 2)
    assert cgroup_memory_bytes(str(tmp_path)) == 3 << 30
    # 3 GiB, a quarter kept for the server: one 2 GiB worker
    assert default_workers(2048, str(tmp_path)) == 1
    assert default_workers(512, str(tmp_path)) == min(HOST, 2)


def test_cgroup_v2_without_limits(tmp_path):
    _write(tmp_path, "cpu.max", "max 100000\n")
    _write(tmp_path, "memory.max", "max\n")
    assert cgroup_cpus(str(tmp_path)) is None and cgroup_memory_bytes(str(tmp_path)) is None
    assert default_workers(2048, str(tmp_path)) == HOST


def test_cgroup_v1_quota_and_memory(tmp_path):
    _write(tmp_path, "cpu/cpu.cfs_quota_us", "100000\n")
    _write(tmp_path, "cpu/cpu.cfs_period_us", "100000\n")
    _write(tmp_path, "memory/memory.limit_in_bytes", str(16 << 30) + "\n")
    assert cgroup_cpus(str(tmp_path)) == 1.0
    assert default_workers(2048, str(tmp_path)) == 1
    _write(tmp_path, "cpu/cpu.cfs_quota_us", "-1\n")  # no quota
    _write(tmp_path, "memory/memory.limit_in_bytes", "9223372036854771712\n")  # v1's "no limit"
    assert cgroup_cpus(str(tmp_path)) is None and cgroup_memory_bytes(str(tmp_path)) is None


def test_no_cgroup_files_means_the_host(tmp_path):
    assert available_cpus(str(tmp_path)) == HOST


def test_the_installed_uvicorn_has_what_the_header_timeout_uses():
    check_uvicorn()  # raises on the installed uvicorn if its internals moved


def test_a_uvicorn_without_those_internals_is_refused():
    class Renamed(H11Protocol):
        on_response_complete = None  # as if a new uvicorn had renamed it

    with pytest.raises(UvicornChanged, match="on_response_complete"):
        check_uvicorn(Renamed)
