"""How many processes a held project gets: a core each that is idle. The 1-minute load average lags (a lint
or build that just ended keeps it near a core for a minute), so where fewer tasks are runnable right now
(/proc/loadavg's running count, less this process) the lesser counts as busy."""
from __future__ import annotations

import os

import pytest

from analyzer import runner


@pytest.mark.parametrize("load, runnable_others, expected", [
    (1.4, 0, 4),    # the average still holds the last minute's work; nothing else runs now
    (1.4, 1, 3),    # one other task runs now
    (3.6, 5, 1),    # busy by both measures (a test suite and a fuzzer beside it)
    (0.1, 3, 4),    # a momentary burst on an idle machine: the average says idle
    (9.0, 9, 1),    # never fewer than one
])
def test_idle_cores_take_the_lesser_of_the_average_and_the_runnable_count(monkeypatch, load, runnable_others, expected):
    monkeypatch.setattr(runner, "default_jobs", lambda: 4)
    monkeypatch.setattr(os, "getloadavg", lambda: (load, load, load))
    monkeypatch.setattr(runner, "_runnable_now", lambda: runnable_others)
    assert runner.idle_cores() == expected


def test_runnable_now_counts_other_tasks_or_leaves_the_average_alone():
    n = runner._runnable_now()
    if os.path.exists("/proc/loadavg"):
        assert isinstance(n, int) and 0 <= n < 10_000  # this process is running while it reads: not counted
    else:
        assert n == float("inf")
