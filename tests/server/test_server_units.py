"""The pieces without a server: the worker's job function, settings and tokens, error field names,
the serve command line, and that the service path never imports torch."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest
from server_helpers import REPO, SYNTAX_ERROR_SRC, TL101_SRC

from analyzer.report import render
from analyzer.static import lint_source
from server import worker
from server.cli import serve_main, serving_url
from server.errors import field_name
from server.settings import ServerSettings, SettingsError, read_token
from server.worker import Job, SubmittedFile, analyze_job


def test_analyze_job_matches_the_library():
    job = Job((SubmittedFile("a.py", text=TL101_SRC), SubmittedFile("b.py", data=SYNTAX_ERROR_SRC.encode())))
    result = analyze_job(job)
    expected = sorted(lint_source(TL101_SRC, "a.py") + lint_source(SYNTAX_ERROR_SRC, "b.py"), key=lambda d: d.sort_key())
    assert result.diagnostics == [d.to_json() for d in expected]
    assert [o.error is None for o in result.files] == [True, False]
    sarif = analyze_job(Job(job.files, fmt="sarif")).rendered
    assert sarif == render(expected, "sarif", root=os.getcwd())


def test_an_engine_crash_on_one_file_is_that_files_error(monkeypatch):
    real = worker.static.lint_source

    def flaky(text, path, **kw):
        if path == "boom.py":
            raise RuntimeError("engine bug")
        return real(text, path, **kw)

    monkeypatch.setattr(worker.static, "lint_source", flaky)
    result = analyze_job(Job((SubmittedFile("boom.py", text="x = 1\n"), SubmittedFile("a.py", text=TL101_SRC))))
    assert result.files[0].error == "internal error while linting: RuntimeError: engine bug"
    assert [d["path"] for d in result.diagnostics] == ["a.py"]


def test_settings_are_checked():
    with pytest.raises(SettingsError):
        ServerSettings(workers=0)
    with pytest.raises(SettingsError):
        ServerSettings(timeout_s=0)
    with pytest.raises(SettingsError):
        ServerSettings(token="")
    assert "hidden-value" not in repr(ServerSettings(token="hidden-value"))  # secrets stay out of logs


def test_token_sources(tmp_path):
    f = tmp_path / "token"
    f.write_text("  from-file \n")
    assert read_token(str(f), environ={}) == "from-file"
    assert read_token(None, environ={"THUNDER_LINT_TOKEN_FILE": str(f), "THUNDER_LINT_TOKEN": "env"}) == "from-file"
    assert read_token(None, environ={"THUNDER_LINT_TOKEN": " env "}) == "env"
    assert read_token(None, environ={}) is None
    (tmp_path / "empty").write_text("\n")
    for bad in ({"THUNDER_LINT_TOKEN_FILE": str(tmp_path / "empty")}, {"THUNDER_LINT_TOKEN_FILE": str(tmp_path / "missing")},
                {"THUNDER_LINT_TOKEN": "  "}):
        with pytest.raises(SettingsError):
            read_token(None, environ=bad)


def test_field_names():
    assert field_name(("body", "files", 0, "path")) == "files[0].path"
    assert field_name(("body", "select", 2)) == "select[2]"
    assert field_name(("query", "format")) == "format"
    assert field_name(("body", 17)) == "body"
    assert field_name(("body",)) == "body"


def test_serve_usage_errors_return_2(tmp_path, capsys, monkeypatch):
    assert serve_main(["--port", "70000"]) == 2
    assert serve_main(["--workers", "0"]) == 2
    assert serve_main(["--timeout", "-1"]) == 2
    (tmp_path / "empty").write_text("")
    assert serve_main(["--token-file", str(tmp_path / "empty")]) == 2
    assert "token file" in capsys.readouterr().err
    assert serve_main(["--help"]) == 0


def test_the_service_path_does_not_import_torch():
    code = (
        "import sys, server.app, server.worker, server.cli, analyzer.static, analyzer.report;"
        "print(sorted(m for m in ('torch', 'compiler') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    code = "import sys, server.worker; print('fastapi' in sys.modules, 'uvicorn' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False False"  # the workers stay lean


def _free_port_in_use():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    return s


def test_thunder_lint_serve_starts_serves_and_stops_cleanly():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("THUNDER_LINT_TOKEN", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "analyzer.cli", "serve", "--host", "127.0.0.1", "--port", "0", "--workers", "1"],
        cwd=REPO, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
    )
    try:
        url = None
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and url is None:
            line = proc.stderr.readline()
            if not line:
                break
            url = serving_url(line)
        assert url, "no 'serving on' line"
        r = httpx.post(f"{url}/analyze", json={"files": [{"path": "a.py", "content": TL101_SRC}]}, timeout=60)
        assert r.json()["summary"]["by_code"] == {"TL101": 1}
        proc.send_signal(signal.SIGTERM)
        rest = proc.communicate(timeout=30)[1]
        # uvicorn shuts down gracefully, then re-raises the signal it caught (so -SIGTERM), as servers should.
        assert proc.returncode in (0, -signal.SIGTERM)
        assert any(json.loads(l).get("message") == "Application shutdown complete." for l in rest.splitlines() if l.startswith("{"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_port_in_use_is_a_clear_error():
    busy = _free_port_in_use()
    try:
        port = busy.getsockname()[1]
        out = subprocess.run(
            [sys.executable, "-m", "server", "--port", str(port), "--workers", "1"],
            cwd=REPO, capture_output=True, text=True, timeout=120, env={**os.environ, "PYTHONPATH": str(REPO)},
        )
    finally:
        busy.close()
    assert out.returncode == 2
    assert "could not serve" in out.stderr


def test_split_files_balances_and_merge_restores_request_order():
    from server.dispatch import merge_results, split_files
    from server.worker import JobResult

    files = [SubmittedFile(f"f{i}.py", text="x = 1\n" * n) for i, n in enumerate([50, 1, 1, 40, 10, 1])]
    chunks = split_files(files, 2)
    assert sorted(i for c in chunks for i in c) == list(range(6))
    loads = [sum(len(files[i].text) for i in c) for c in chunks]
    assert max(loads) - min(loads) <= len(files[0].text) - len(files[3].text) + 12
    assert split_files(files[:1], 4) == [[0]] and split_files([], 2) == [[]]
    results = [analyze_job(Job(tuple(files[i] for i in c))) for c in chunks]
    merged = merge_results(chunks, results, len(files))
    assert [o.path for o in merged.files] == [f.path for f in files]
    whole = analyze_job(Job(tuple(files)))
    assert isinstance(merged, JobResult) and merged.diagnostics == whole.diagnostics
