"""Limits and bad input: every one a clear JSON error with a stable code, the field named, nothing echoed."""

from __future__ import annotations

import socket
import time

from server_helpers import LIMITS, TL101_SRC, TOKEN


def _read_response(sock) -> str:
    """Everything until the JSON error body is complete (headers and body may come in separate segments)."""
    data = b""
    while b"\r\n\r\n" not in data or not data.rstrip().endswith(b"}"):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data.decode("latin-1")


def _error(r, status, code):
    """An RFC 9457 problem: its media type, its members, and the service's stable `code` beside them."""
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    error = r.json()
    assert error["code"] == code, error
    assert error["type"] == f"urn:thunder-lint:problem:{code}" and error["status"] == status
    assert error["title"] and error["detail"]
    assert error["request_id"] == r.headers["x-request-id"]
    return error


def _fields(error):
    return {f["field"] for f in error.get("fields") or ()}


def test_body_over_the_limit_is_413(api):
    big = "x = 1\n" * (LIMITS["max_body_bytes"] // 6 + 10)
    error = _error(api.post("/analyze", json={"files": [{"path": "a.py", "content": big}]}), 413, "body_too_large")
    assert str(LIMITS["max_body_bytes"]) in error["detail"]


def test_body_streamed_without_length_is_cut_at_the_limit(api):
    chunk = b" " * 65536

    def body():
        yield b'{"files": ['
        for _ in range(LIMITS["max_body_bytes"] // len(chunk) + 4):
            yield chunk
        yield b"]}"

    r = api.post("/analyze", content=body(), headers={"content-type": "application/json"})
    _error(r, 413, "body_too_large")


def test_lying_content_length_is_refused_before_reading(authed_server):
    host, port = authed_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(
            b"POST /analyze HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: 999999999\r\n\r\n{"
        )
        reply = _read_response(s)
    assert reply.startswith("HTTP/1.1 413"), reply


def test_a_stalled_body_is_408(authed_server):
    host, port = authed_server.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as s:
        s.sendall(
            b"POST /analyze HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode()
            + b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"files\": ["
        )
        started = time.monotonic()
        reply = _read_response(s)
        waited = time.monotonic() - started
    assert reply.startswith("HTTP/1.1 408"), reply
    assert '"code":"body_timeout"' in reply.replace(" ", "")
    assert LIMITS["body_timeout"] - 0.5 <= waited < LIMITS["body_timeout"] + 10


def test_too_many_files_is_413_naming_files(api):
    files = [{"path": f"f{i}.py", "content": "x = 1\n"} for i in range(LIMITS["max_files"] + 1)]
    error = _error(api.post("/analyze", json={"files": files}), 413, "too_many_files")
    assert _fields(error) == {"files"}


def test_file_over_the_per_file_limit_is_413_naming_it(api):
    files = [{"path": "ok.py", "content": "x = 1\n"}, {"path": "big.py", "content": "#" * (LIMITS["max_file_bytes"] + 1)}]
    error = _error(api.post("/analyze", json={"files": files}), 413, "file_too_large")
    assert _fields(error) == {"files[1].content"}
    # The limit counts bytes, not characters: 2-byte characters reach it at half the length.
    wide = [{"path": "wide.py", "content": "# " + "é" * (LIMITS["max_file_bytes"] // 2)}]
    _error(api.post("/analyze", json={"files": wide}), 413, "file_too_large")


def test_malformed_json_is_422_naming_the_body(api):
    r = api.post("/analyze", content=b'{"files": [{"path": "a.py",', headers={"content-type": "application/json"})
    error = _error(r, 422, "invalid_request")
    assert _fields(error) == {"body"}
    assert "not valid JSON" in error["detail"]


def test_wrong_types_are_422_naming_each_field(api):
    secret = "SOURCE_TEXT_MUST_NOT_BE_ECHOED"
    body = {
        "files": [{"path": "a.py", "content": 5}, {"path": 7, "content": "x"}, {"path": "c.py", "content": secret, "mode": secret}],
        "fix": "yes",
        "select": "TL101",
        "unknown_option": True,
    }
    r = api.post("/analyze", json=body)
    error = _error(r, 422, "invalid_request")
    assert {"files[0].content", "files[1].path", "files[2].mode", "fix", "select", "unknown_option"} <= _fields(error)
    assert secret not in r.text


def test_missing_and_doubled_content_are_422(api):
    for f in ({"path": "a.py"}, {"path": "a.py", "content": "x", "content_base64": "eA=="}):
        error = _error(api.post("/analyze", json={"files": [f]}), 422, "invalid_request")
        assert "exactly one of" in error["detail"]
    _error(api.post("/analyze", json={}), 422, "invalid_request")
    _error(api.post("/analyze", json=[1, 2]), 422, "invalid_request")


def test_bad_paths_and_content_are_422(api):
    cases = {
        "files[0].path": {"path": "a\0b.py", "content": "x = 1\n"},
        "files[1].path": {"path": "", "content": "x = 1\n"},
        "files[2].content_base64": {"path": "c.py", "content_base64": "not base64!!"},
    }
    error = _error(api.post("/analyze", json={"files": list(cases.values())}), 422, "invalid_request")
    assert _fields(error) == set(cases)


def test_non_utf8_body_and_lone_surrogates_are_422(api):
    r = api.post("/analyze", content=b'{"files": [{"path": "a.py", "content": "\xff\xfe"}]}', headers={"content-type": "application/json"})
    assert "UTF-8" in _error(r, 422, "invalid_request")["detail"]
    r = api.post("/analyze", content=b'{"files": [{"path": "a.py", "content": "x = \\ud800"}]}', headers={"content-type": "application/json"})
    assert _fields(_error(r, 422, "invalid_request")) == {"files[0].content"}


def test_unknown_rule_selectors_and_format_are_422(api):
    body = {"files": [{"path": "a.py", "content": TL101_SRC}], "select": ["TL1", "TL999"], "ignore": ["nope"],
            "extend_select": ["TL101,TL102"]}
    error = _error(api.post("/analyze", json=body), 422, "invalid_request")
    assert _fields(error) == {"select[1]", "ignore[0]", "extend_select[0]"}
    assert "unknown rule selector 'TL999'" in error["detail"]
    error = _error(api.post("/analyze", params={"format": "xml"}, json={"files": []}), 422, "invalid_request")
    assert _fields(error) == {"format"}
    error = _error(api.post("/analyze", params={"fromat": "sarif"}, json={"files": []}), 422, "invalid_request")
    assert _fields(error) == {"fromat"}


def test_non_json_content_type_is_415(api):
    r = api.post("/analyze", content=b"files=a.py", headers={"content-type": "application/x-www-form-urlencoded"})
    _error(r, 415, "unsupported_media_type")


def test_the_server_still_works_after_all_that(api):
    r = api.post("/analyze", json={"files": [{"path": "a.py", "content": TL101_SRC}]})
    assert r.status_code == 200 and r.json()["summary"]["by_code"] == {"TL101": 1}
