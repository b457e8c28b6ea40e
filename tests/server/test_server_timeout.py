"""A pathological file runs past the time limit: that request gets a clear JSON error, its worker is
replaced, and the other requests (during and after) still succeed."""

from __future__ import annotations

import threading
import time

from conftest import LIMITS, TOKEN
from server_helpers import TL101_SRC, pathological_source


def test_slow_request_times_out_while_others_succeed(authed_server):
    before = authed_server.wait_healthy()
    slow_source = pathological_source()
    assert len(slow_source.encode()) <= LIMITS["max_file_bytes"]
    outcome = {}

    def slow_request():
        with authed_server.client(TOKEN) as c:
            started = time.monotonic()
            r = c.post("/analyze", json={"files": [{"path": "slow.py", "content": slow_source}]})
            outcome["response"], outcome["seconds"] = r, time.monotonic() - started

    thread = threading.Thread(target=slow_request)
    thread.start()
    time.sleep(0.3)  # let the slow job take a worker
    statuses = []
    with authed_server.client(TOKEN) as c:
        while thread.is_alive():  # the other worker keeps serving meanwhile
            r = c.post("/analyze", json={"files": [{"path": "ok.py", "content": TL101_SRC}]})
            statuses.append(r.status_code)
            assert r.json()["summary"]["by_code"] == {"TL101": 1}
    thread.join()
    assert statuses and set(statuses) == {200}

    r = outcome["response"]
    assert r.status_code == 504, r.text
    error = r.json()["error"]
    assert error["code"] == "analysis_timeout"
    assert "time limit" in error["message"] and "replaced" in error["message"]
    assert outcome["seconds"] < LIMITS["timeout"] + 10  # stopped at the limit, not after the 20+ s of work

    after = authed_server.wait_healthy(replaced_at_least=before["replaced_workers"] + 1)
    assert after["workers"] == 2
    with authed_server.client(TOKEN) as c:
        for _ in range(4):  # both workers, the new one included, serve normally
            r = c.post("/analyze", json={"files": [{"path": "ok.py", "content": TL101_SRC}]})
            assert r.status_code == 200
