"""A real ``thunder-lint serve`` in a subprocess on loopback, and sample sources for the server tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx

from server.cli import serving_url

# the auth token and small limits of the session server in conftest.py (here, not in conftest: a module named
# `conftest` is whichever test folder's conftest was imported first)
TOKEN = "s3cret-test-token"
LIMITS = {"max_body_bytes": 600_000, "max_files": 8, "max_file_bytes": 300_000, "timeout": 3.0, "body_timeout": 2.0}

REPO = Path(__file__).resolve().parents[2]

TL101_SRC = """\
import torch


@torch.compile
def f(x):
    y = x.reshape(-1)
    y.add_(1)
    return x
"""

CLEAN_SRC = "import torch\n\n\ndef g(x):\n    return x * 2\n"

SYNTAX_ERROR_SRC = "def broken(:\n    return 1\n"

HAZARDS_SRC = """\
import torch

SCALE = 2.0


def set_scale(s):
    global SCALE
    SCALE = s


@torch.compile
def step(x, n):
    y = x.flatten()
    y.mul_(SCALE)
    if x.shape[0] > n:
        print("big")
    return y.sum().item()
"""


def pathological_source(max_bytes: int = 300_000) -> str:
    """Valid Python, just under ``max_bytes``, that takes the engine many times the time-limit tests' limits
    when its fixes are asked for (send it with :data:`SLOW_OPTIONS`): about 1,700 jitted functions, each
    with three fixable TL101 fixes, a global read, a print, symbolic and data-dependent control flow.
    Measured on this project's 2-core machine (2026-11): linting it alone ~1.4 s, with ``fix`` and
    ``unsafe_fixes`` ~4.3 s (it was ~14 s before the engine's speed passes). Slowness comes from volume,
    not from one superlinear pattern, so the time-limit tests use limits far below it (0.5-1 s); if the
    engine gets fast enough that this finishes inside them, those tests fail with a message that says
    so: send more files per request or make the limit smaller."""
    block = (
        "@torch.compile\ndef f{i}(x, n):\n    y = x.reshape(-1)\n    y.add_(1)\n    if n > 3:\n"
        "        print(G{i})\n    for k in range(n):\n        x = x + k\n    return y.sum().item()\n\n"
    )
    parts, size, i = ["import torch\n\n\n"], 20, 0
    while True:
        text = block.format(i=i)
        if size + len(text) > max_bytes:
            return "".join(parts)
        parts.append(text)
        size, i = size + len(text), i + 1


SLOW_OPTIONS = {"fix": True, "unsafe_fixes": True}


class ServerProcess:
    """``python -m server ARGS`` with its stderr collected; ``url`` once it prints where it listens."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, start_timeout: float = 90.0) -> None:
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("THUNDER_LINT_TOKEN")}
        full_env["PYTHONPATH"] = str(REPO) + os.pathsep + full_env.get("PYTHONPATH", "")
        full_env.update(env or {})
        self.args = args
        self.process = subprocess.Popen(
            [sys.executable, "-m", "server", "--host", "127.0.0.1", "--port", "0", *args],
            cwd=REPO,
            env=full_env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            errors="replace",
        )
        self.lines: list[str] = []
        self._lock = threading.Lock()
        self.url: str | None = None
        self._ready = threading.Event()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        if not self._ready.wait(start_timeout) or self.url is None:
            self.stop()
            raise RuntimeError("the server did not start:\n" + "\n".join(self.lines))

    def _read_stderr(self) -> None:
        for line in self.process.stderr:
            line = line.rstrip("\n")
            with self._lock:
                self.lines.append(line)
            if serving_url(line):
                self.url = serving_url(line)
                self._ready.set()
        self._ready.set()  # the process ended

    def log_lines(self) -> list[str]:
        with self._lock:
            return list(self.lines)

    def access_entries(self) -> list[dict]:
        entries = []
        for line in self.log_lines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get("event") == "request":
                entries.append(entry)
        return entries

    def client(self, token: str | None = None, timeout: float = 60.0) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout)

    def wait_healthy(self, *, replaced_at_least: int = 0, timeout: float = 90.0) -> dict:
        """Poll /healthz until every worker is alive (and at least ``replaced_at_least`` were replaced)."""
        deadline = time.monotonic() + timeout
        body: dict = {}
        with self.client() as c:
            while time.monotonic() < deadline:
                body = c.get("/healthz").json()
                if body["replaced_workers"] >= replaced_at_least and body["idle_workers"] == body["workers"] and body["workers"] > 0:
                    return body
                time.sleep(0.2)
        raise AssertionError(f"the server did not become healthy: {body}")

    def stop(self) -> int | None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode
