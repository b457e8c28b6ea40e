"""Bearer-token auth (from the environment or a file), CORS off by default and on when asked for."""

from __future__ import annotations

import pytest
from server_helpers import TOKEN, ServerProcess

ORIGIN = "https://ci.example.org"


def test_requests_without_the_right_token_are_401(authed_server):
    with authed_server.client() as anonymous:
        for method, path in (("GET", "/rules"), ("GET", "/version"), ("GET", "/openapi.json"), ("POST", "/analyze")):
            r = anonymous.request(method, path, json={"files": []} if method == "POST" else None)
            assert r.status_code == 401, (path, r.text)
            assert r.json()["code"] == "unauthorized"
            assert r.headers["www-authenticate"].startswith("Bearer")
        for header in (f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN, f"Bearer {TOKEN[:-1]}", "Bearer"):
            r = anonymous.get("/rules", headers={"Authorization": header})
            assert r.status_code == 401, header
        assert anonymous.get("/healthz").status_code == 200  # probes need no token
    with authed_server.client(TOKEN) as client:
        assert client.get("/rules").status_code == 200
        assert client.get("/rules", headers={"Authorization": f"bearer {TOKEN}"}).status_code == 200


def test_unauthenticated_big_body_is_401_not_read(authed_server):
    with authed_server.client() as anonymous:
        r = anonymous.post("/analyze", content=b"{" * 5_000_000, headers={"content-type": "application/json"})
        assert r.status_code == 401


def test_openapi_declares_bearer_auth(api):
    schema = api.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearerAuth"] == {"type": "http", "scheme": "bearer"}
    assert schema["paths"]["/analyze"]["post"]["security"] == [{"bearerAuth": []}]
    assert "security" not in schema["paths"]["/healthz"]["get"]


def test_cors_is_off_by_default(api):
    preflight = api.options(
        "/analyze", headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST"}
    )
    assert "access-control-allow-origin" not in preflight.headers
    r = api.get("/rules", headers={"Origin": ORIGIN})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers


@pytest.fixture(scope="module")
def file_token_server(tmp_path_factory):
    token_file = tmp_path_factory.mktemp("secret") / "token"
    token_file.write_text("token-from-a-file\n")
    server = ServerProcess("--workers", "1", "--cors-origin", ORIGIN, env={"THUNDER_LINT_TOKEN_FILE": str(token_file)})
    yield server
    server.stop()


def test_token_from_a_file_and_cors_when_configured(file_token_server):
    with file_token_server.client("token-from-a-file") as client:
        assert client.get("/version").status_code == 200
        r = client.get("/version", headers={"Origin": ORIGIN})
        assert r.headers["access-control-allow-origin"] == ORIGIN
        other = client.get("/version", headers={"Origin": "https://evil.example"})
        assert "access-control-allow-origin" not in other.headers
    with file_token_server.client(TOKEN) as wrong:
        assert wrong.get("/version").status_code == 401
