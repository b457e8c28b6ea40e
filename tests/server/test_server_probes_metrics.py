"""Liveness and readiness probes, Prometheus /metrics and gzip-compressed request bodies, on the real server
(uvicorn on loopback, auth on, small limits: conftest.py)."""

from __future__ import annotations

import gzip
import json
import zlib

import httpx
from server_helpers import LIMITS, TL101_SRC, TOKEN


def test_probes_answer_without_credentials(authed_server):
    with authed_server.client() as anonymous:
        assert anonymous.get("/livez").json() == {"status": "ok"}
        ready = anonymous.get("/readyz")
        assert ready.status_code == 200 and ready.json() == {"status": "ok"}
        assert anonymous.get("/metrics").status_code == 401  # metrics are not public


def test_readyz_is_503_until_the_pool_has_started():
    import asyncio

    from server.app import create_app
    from server.settings import ServerSettings

    app = create_app(ServerSettings(workers=1))  # lifespan not run: no worker started yet

    async def probe():
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
            return await c.get("/readyz"), await c.get("/livez")

    ready, live = asyncio.run(probe())
    assert ready.status_code == 503 and ready.json() == {"status": "not ready"}
    assert live.status_code == 200


def _samples(text: str) -> dict[str, float]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            out[name] = float(value)
    return out


def test_metrics_count_requests_by_route_and_status_and_read_the_pool(api):
    before = _samples(api.get("/metrics").text)
    key = 'thunder_lint_http_requests_total{method="GET",route="/rules/{code}",status="404"}'
    for _ in range(3):
        assert api.get("/rules/TL999").status_code == 404
    assert api.post("/analyze", json={"files": [{"path": "a.py", "content": TL101_SRC}]}).status_code == 200
    r = api.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    after = _samples(r.text)
    assert after[key] - before.get(key, 0) == 3  # the route's template, never the raw path
    ok = 'thunder_lint_http_requests_total{method="POST",route="/analyze",status="200"}'
    assert after[ok] - before.get(ok, 0) == 1
    count = 'thunder_lint_http_request_duration_seconds_count{route="/analyze"}'
    assert after[count] - before.get(count, 0) == 1
    assert after["thunder_lint_queue_length"] == 0 and after["thunder_lint_workers_alive"] == 2
    assert "thunder_lint_worker_restarts_total" in after


def test_a_gzip_body_is_inflated(api):
    body = gzip.compress(json.dumps({"files": [{"path": "a.py", "content": TL101_SRC}]}).encode())
    r = api.post("/analyze", content=body, headers={"content-type": "application/json", "content-encoding": "gzip"})
    assert r.status_code == 200, r.text
    assert [d["code"] for d in r.json()["diagnostics"]] == ["TL101"]


def test_a_gzip_bomb_is_413_after_inflating_no_more_than_the_limit(api):
    # 50 times the body limit once inflated, in a small fraction of it as gzip
    inflated = LIMITS["max_body_bytes"] * 50
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = compressor.compress(b'{"files": [{"path": "a.py", "content": "' + b" " * inflated) + compressor.flush()
    assert len(bomb) < LIMITS["max_body_bytes"]
    r = api.post("/analyze", content=bomb, headers={"content-type": "application/json", "content-encoding": "gzip"})
    assert r.status_code == 413, r.text
    assert r.headers["content-type"].startswith("application/problem+json") and r.json()["code"] == "body_too_large"
    assert api.get("/readyz").status_code == 200  # the server is fine


def test_bad_gzip_is_400_and_an_unknown_encoding_415(api):
    r = api.post("/analyze", content=b"not gzip at all", headers={"content-type": "application/json",
                                                                  "content-encoding": "gzip"})
    assert r.status_code == 400 and r.json()["code"] == "bad_request" and "gzip" in r.json()["detail"]
    cut = gzip.compress(b'{"files": []}')[:-6]
    r = api.post("/analyze", content=cut, headers={"content-type": "application/json", "content-encoding": "gzip"})
    assert r.status_code == 400 and "gzip" in r.json()["detail"]
    r = api.post("/analyze", content=b"{}", headers={"content-type": "application/json", "content-encoding": "br"})
    assert r.status_code == 415 and r.json()["code"] == "unsupported_media_type"


def test_the_openapi_schema_says_errors_are_problems(api):
    schema = api.get("/openapi.json").json()
    responses = schema["paths"]["/analyze"]["post"]["responses"]
    assert "application/problem+json" in responses["413"]["content"]
    assert {"type", "title", "status", "detail", "code"} <= set(schema["components"]["schemas"]["ErrorResponse"]["properties"])


def test_token_is_still_needed_for_analyze(authed_server):
    with authed_server.client() as anonymous:
        r = anonymous.post("/analyze", json={"files": []})
        assert r.status_code == 401 and r.json()["type"] == "urn:thunder-lint:problem:unauthorized"
    assert TOKEN
