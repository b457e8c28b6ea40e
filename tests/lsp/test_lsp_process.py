"""The server as a process: the exit status LSP asks for, a client that goes away, the subcommand itself."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from lsp_helpers import REPO, TIMEOUT, server_env


def _raw_server(tmp_path: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "analyzer.cli", "lsp"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=server_env(tmp_path), cwd=REPO)


def _send(proc: subprocess.Popen, message: dict) -> None:
    body = json.dumps(message).encode()
    proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    proc.stdin.flush()


def test_exit_without_shutdown_is_status_1_and_closed_stdin_ends_the_server(tmp_path):
    proc = _raw_server(tmp_path)
    _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}})
    _send(proc, {"jsonrpc": "2.0", "method": "exit"})
    assert proc.wait(TIMEOUT) == 1

    proc = _raw_server(tmp_path)
    _send(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {}}})
    proc.stdin.close()  # the editor went away
    assert proc.wait(TIMEOUT) == 1
    assert b"Traceback" not in proc.stderr.read()


def test_lsp_subcommand_help_and_missing_extra_message(tmp_path):
    out = subprocess.run([sys.executable, "-m", "analyzer.cli", "lsp", "--help"], capture_output=True, text=True,
                         env=server_env(tmp_path), cwd=REPO, timeout=TIMEOUT)
    assert out.returncode == 0 and "Language Server" in out.stdout
    # without pygls: a clear message and status 2, not a traceback
    blocker = tmp_path / "block"
    blocker.mkdir()
    (blocker / "pygls.py").write_text("raise ImportError('pygls is not installed (simulated)')\n")
    env = server_env(tmp_path)
    env["PYTHONPATH"] = f"{blocker}:{env['PYTHONPATH']}"
    out = subprocess.run([sys.executable, "-m", "analyzer.cli", "lsp"], capture_output=True, text=True, env=env,
                         cwd=REPO, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    assert out.returncode == 2, out.stderr
    assert "pip install 'thunder-lint[lsp]'" in out.stderr and "Traceback" not in out.stderr
