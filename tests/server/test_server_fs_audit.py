"""The service never touches its own file system because of a request: a real server runs with the
file-system audit armed (server/fs_audit.py) and every endpoint and format is exercised, with paths
that name real, special and missing files, syntax errors, compile-time errors and fixes."""

from __future__ import annotations

import base64
import gzip
import io
import subprocess
import sys
import tarfile
import time

import pytest
from server_helpers import HAZARDS_SRC, SYNTAX_ERROR_SRC, TL101_SRC, ServerProcess

from server import fs_audit

PATHS = [
    "/proc/self/fd/3",  # a pipe in every worker: reading it would block
    "/proc/self/fd/0",
    "/etc/passwd",
    "/etc/shadow",
    "/definitely/missing.py",
    "../../../etc/hostname",
    "server/app.py",  # the server's own source, relative to its cwd
    "pkg/model.py",
    "<stdin>",
    "<unknown>",
]
SOURCES = [
    SYNTAX_ERROR_SRC,
    "x = (1 +\n",
    "return 1\n",  # compile-time errors
    "def f(a, a):\n    pass\n",
    "nonlocal x\n",
    "type X = int\n",  # newer syntax
    "f'{'a'}'\n",
    "\tif x:\n  pass\n",
    "x = 'unterminated\n",
    TL101_SRC,
    HAZARDS_SRC,
    "(" * 300 + ")" * 300 + "\n",  # too deep
]


def test_the_audit_sees_what_it_must():
    """The control: armed in a fresh process, a parse error under a real path and a stat are counted."""
    code = (
        "import os, sys\n"
        "from server import fs_audit\n"
        "fs_audit.arm()\n"
        "try:\n    compile('def f(:\\n', '/etc/passwd', 'exec')\nexcept SyntaxError:\n    pass\n"
        "os.path.exists('/nonexistent-thunder-lint')\n"
        "os.listdir('/')\n"
        "print(fs_audit.count())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert int(out.stdout) >= 3
    assert f"{fs_audit.MARK} open '/etc/passwd'" in out.stderr
    assert f"{fs_audit.MARK} os.stat" in out.stderr
    assert f"{fs_audit.MARK} os.listdir" in out.stderr


@pytest.fixture(scope="module")
def audited_server():
    server = ServerProcess("--workers", "2", "--timeout", "30", env={fs_audit.ENV: "1"})
    yield server
    server.stop()


def _requests():
    yield "GET", "/healthz", None, None
    yield "GET", "/version", None, None
    yield "GET", "/rules", None, None
    yield "GET", "/rules/TL101", None, None
    yield "GET", "/rules/TL999", None, None
    yield "GET", "/openapi.json", None, None
    yield "GET", "/docs", None, None
    yield "GET", "/nowhere", None, None
    for fmt in ("json", "sarif", "github"):
        for options in ({}, {"fix": True}, {"fix": True, "unsafe_fixes": True}):
            files = [{"path": p, "content": s} for p in PATHS for s in SOURCES[:3]]
            yield "POST", "/analyze", {"format": fmt}, {"files": files, **options}
            for src in SOURCES:
                yield "POST", "/analyze", {"format": fmt}, {"files": [{"path": PATHS[0], "content": src}], **options}
            raw = [
                b"\xff\xfe not text\n",
                "# -*- coding: latin-1 -*-\nx = '\xe9'\n".encode("latin-1"),  # a codec imported on first use
                "# coding: cp1252\nx = '\xe9'\n".encode("cp1252"),
                b"# coding: no-such-codec\nx = 1\n",  # an unknown name makes importlib search the folder
                b"\0binary",
            ]
            files = [{"path": p, "content_base64": base64.b64encode(r).decode()} for p, r in zip(PATHS, raw)]
            yield "POST", "/analyze", {"format": fmt}, {"files": files, **options}
    # A repository as a tar.gz (server/archive.py): .gitignore, a config, a hostile member, a gzip bomb.
    yield "POST", "/analyze", {"format": "json"}, _archive([("pkg/__init__.py", b""), ("pkg/m.py", SOURCES[0].encode()),
                                                            (".gitignore", b"gen/\n"), ("gen/x.py", b"x = 1\n"),
                                                            ("pyproject.toml", b"[tool.thunder-lint]\nignore = ['TL204']\n")])
    yield "POST", "/analyze", None, _archive([("../evil.py", b"x = 1\n")])
    yield "POST", "/analyze", None, gzip.compress(bytes(64 << 20), 9)
    # Invalid requests take the error paths.
    yield "POST", "/analyze", None, {"files": [{"path": "/etc/passwd"}]}
    yield "POST", "/analyze", None, {"files": [{"path": "/etc/passwd", "content": "x", "content_base64": None}]}
    yield "POST", "/analyze", {"format": "xml"}, {"files": []}
    yield "POST", "/analyze", None, {"files": [], "select": ["TL9"]}
    yield "POST", "/analyze", None, "not json"


def _archive(members) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_no_file_system_call_on_the_request_path(audited_server):
    n = 0
    with audited_server.client(timeout=60) as c:
        for method, url, params, body in _requests():
            if isinstance(body, bytes):
                r = c.request(method, url, params=params, content=body, headers={"content-type": "application/gzip"})
            elif isinstance(body, str):
                r = c.request(method, url, params=params, content=body, headers={"content-type": "application/json"})
            else:
                r = c.request(method, url, params=params, json=body)
            assert r.status_code < 500, (url, params, r.status_code, r.text[:300])
            n += 1
    time.sleep(0.5)  # let the workers' stderr lines arrive
    hits = [line for line in audited_server.log_lines() if fs_audit.MARK in line]
    assert n > 100
    assert hits == [], f"{len(hits)} file-system calls in {n} requests:\n" + "\n".join(hits[:20])


def test_syntax_error_position_does_not_depend_on_the_path(audited_server):
    """The column of a TL001 came from the server's copy of the named file: an oracle for its files."""
    src = "x = 1\nclass C(:\n    pass\n"
    seen = set()
    with audited_server.client() as c:
        for path in ("/etc/passwd", "/etc/shadow", "/nope.py", "server/app.py"):
            r = c.post("/analyze", json={"files": [{"path": path, "content": src}]})
            (d,) = r.json()["diagnostics"]
            seen.add((d["line"], d["column"], d["end_line"], d["end_column"], d["message"]))
    assert seen == {(2, 9, 2, 10, "syntax error: invalid syntax")}


def test_a_pipe_as_path_does_not_block_a_worker(audited_server):
    start = time.monotonic()
    with audited_server.client(timeout=30) as c:
        for _ in range(4):
            r = c.post("/analyze", json={"files": [{"path": "/proc/self/fd/3", "content": "def f(:\n"}]})
            assert r.status_code == 200
            assert r.json()["files"][0]["error"].startswith("syntax error")
    assert time.monotonic() - start < 20


def test_null_content_is_a_validation_error(audited_server):
    """The schema says string; null was taken as absent."""
    with audited_server.client() as c:
        for body in ({"path": "a.py", "content": "x = 1\n", "content_base64": None}, {"path": "a.py", "content": None, "content_base64": "eCA9IDEK"}):
            r = c.post("/analyze", json={"files": [body]})
            assert r.status_code == 422, r.text
            assert "not null" in r.text
