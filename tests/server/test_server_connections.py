"""Connection-level limits: half-open connections (headers never finished) are closed after the
header timeout; a body over the limit is answered with a 413 that clients sending the whole body first
(Python's urllib) can read; every log line, the "serving on" one included, is JSON."""

from __future__ import annotations

import json
import socket
import time
import urllib.error
import urllib.request

import pytest
from server_helpers import ServerProcess

HEADER_TIMEOUT = 1.0
MAX_BODY = 200_000


@pytest.fixture(scope="module")
def server():
    s = ServerProcess("--workers", "1", "--header-timeout", str(HEADER_TIMEOUT), "--max-body-bytes", str(MAX_BODY))
    yield s
    s.stop()


def _address(server):
    host, port = server.url.removeprefix("http://").split(":")
    return host, int(port)


def _wait_closed(sock, limit: float) -> tuple[bytes, float]:
    """Everything the server sends until it closes, and how long that took."""
    start = time.monotonic()
    sock.settimeout(limit)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except socket.timeout:
        raise AssertionError(f"still open after {limit} s") from None
    except ConnectionResetError:
        pass
    return data, time.monotonic() - start


def test_half_open_connections_are_closed(server):
    socks = [socket.create_connection(_address(server), timeout=10) for _ in range(40)]
    try:
        for i, s in enumerate(socks):
            if i % 2:
                s.sendall(b"POST /analyze HTTP/1.1\r\nHost: x\r\nContent-")  # headers never finished
        for i, s in enumerate(socks):
            data, took = _wait_closed(s, 10 * HEADER_TIMEOUT + 5)
            if i % 2:
                assert data.startswith(b"HTTP/1.1 408"), data[:100]
                assert b"header_timeout" in data
    finally:
        for s in socks:
            s.close()


def test_keep_alive_then_stalled_headers_is_closed(server):
    with socket.create_connection(_address(server), timeout=10) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.3)
        first = s.recv(65536)
        assert first.startswith(b"HTTP/1.1 200")
        s.sendall(b"GET /healthz HTTP/1.1\r\nHo")  # the next request stalls mid-header
        data, _ = _wait_closed(s, 10 * HEADER_TIMEOUT + 5)
        assert data.startswith(b"HTTP/1.1 408")


def test_slow_but_steady_requests_still_work(server):
    with socket.create_connection(_address(server), timeout=10) as s:
        for piece in (b"GET /heal", b"thz HTTP/1.1\r\n", b"Host: x\r\n", b"\r\n"):
            s.sendall(piece)
            time.sleep(HEADER_TIMEOUT / 5)
        reply = s.recv(65536)
    assert reply.startswith(b"HTTP/1.1 200")


def test_urllib_reads_the_413_of_a_body_over_the_limit(server):
    body = json.dumps({"files": [{"path": "a.py", "content": "x = 1\n" * 3_000_000}]}).encode()  # 18 MB: past socket buffers
    assert len(body) > MAX_BODY
    for _ in range(5):
        req = urllib.request.Request(server.url + "/analyze", data=body, headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(req, timeout=30)
        assert caught.value.code == 413
        error = json.loads(caught.value.read())
        assert error["code"] == "body_too_large" and str(MAX_BODY) in error["detail"]


def test_every_log_line_is_json(server):
    with server.client() as c:
        assert c.get("/healthz").status_code == 200
    time.sleep(0.3)
    lines = [line for line in server.log_lines() if line.strip()]
    assert lines
    for line in lines:
        assert isinstance(json.loads(line), dict), line
    (serving,) = [json.loads(line) for line in lines if '"serving"' in line]
    assert serving["url"] == server.url and serving["message"] == f"serving on {server.url}"


def test_a_request_that_cannot_finish_in_time_is_413_at_once():
    s = ServerProcess("--workers", "1", "--timeout", "1", "--max-body-bytes", "20000000", "--max-file-bytes", "20000000")
    try:
        with s.client() as c:
            start = time.monotonic()
            big = "x = 1\n" * 600_000  # 3.4 MiB: at least 1.7 s at the fastest rate, over the 1 s limit
            r = c.post("/analyze", json={"files": [{"path": "big.py", "content": big}]})
            assert r.status_code == 413, r.text
            error = r.json()
            assert error["code"] == "request_too_large"
            assert "more than the time limit of 1 s" in error["detail"] and "--timeout" in error["detail"]
            assert time.monotonic() - start < 5  # refused up front, not after the limit
            small = c.post("/analyze", json={"files": [{"path": "ok.py", "content": "x = 1\n" * 1000}]})
            assert small.status_code == 200
    finally:
        s.stop()
