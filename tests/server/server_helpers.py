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


def pathological_source() -> str:
    """Valid Python that takes the current static engine many seconds, for two independent reasons (so a
    speed-up of one does not make it fast): a long chain of rebinding reshapes with in-place writes in one
    jitted function (the flow analysis is superlinear in it: ~20 s alone), and hundreds of jitted
    functions full of fixable hazards (building their fixes: ~6 s alone)."""
    chain = "".join("    x = x.reshape(-1)\n    x.add_(1)\n" for _ in range(2200))
    block = (
        "@torch.compile\ndef f{i}(x, n):\n    y = x.reshape(-1)\n    y.add_(1)\n    if n > 3:\n"
        "        print(G{i})\n    for k in range(n):\n        x = x + k\n    return y.sum().item()\n\n"
    )
    functions = "".join(block.format(i=i) for i in range(600))
    return "import torch\n\n\n@torch.compile\ndef chain(x):\n" + chain + "    return x\n\n\n" + functions


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
            if line.startswith("thunder-lint: serving on "):
                self.url = line.removeprefix("thunder-lint: serving on ").strip()
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
