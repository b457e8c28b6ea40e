"""Structured access logs: one JSON line per request with id, file count, duration; never source text."""

from __future__ import annotations

import time

from server_helpers import TL101_SRC


def _entry_for(server, request_id, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [e for e in server.access_entries() if e["request_id"] == request_id]
        if found:
            return found[-1]
        time.sleep(0.05)
    raise AssertionError(f"no access log line for {request_id}")


def test_access_log_has_request_id_files_duration_and_no_source(authed_server, api):
    marker = "VERY_SECRET_SOURCE_MARKER_9f2c"
    source = TL101_SRC + f"\n# {marker}\n"
    r = api.post(
        "/analyze",
        json={"files": [{"path": "a.py", "content": source}, {"path": "b.py", "content": marker}]},
        headers={"X-Request-ID": "ci-run-42.step-3"},
    )
    assert r.status_code == 200
    assert r.headers["x-request-id"] == "ci-run-42.step-3"  # a sane client id is kept
    entry = _entry_for(authed_server, "ci-run-42.step-3")
    assert entry["method"] == "POST" and entry["path"] == "/analyze" and entry["status"] == 200
    assert entry["files"] == 2
    assert entry["duration_ms"] > 0 and entry["bytes_in"] > len(source)

    bad = api.post("/analyze", json={"files": [{"path": "c.py", "content": 3}], "x": marker})
    assert bad.status_code == 422
    failed = _entry_for(authed_server, bad.headers["x-request-id"])
    assert failed["status"] == 422 and failed["error"] == "invalid_request"
    assert not any(marker in line for line in authed_server.log_lines())


def test_unsafe_request_ids_are_replaced(api):
    r = api.get("/version", headers={"X-Request-ID": "bad id\twith spaces" + "x" * 100})
    rid = r.headers["x-request-id"]
    assert rid != "" and " " not in rid and len(rid) == 32
