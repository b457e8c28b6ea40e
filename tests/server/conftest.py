"""Real servers on loopback for the server tests: one with auth and small limits, one open."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # server_helpers, whatever pytest's import mode

from server_helpers import LIMITS, TOKEN, ServerProcess  # noqa: E402


@pytest.fixture(scope="session")
def authed_server():
    """Auth on (token from the environment), small limits, a 3 s time limit, two workers."""
    server = ServerProcess(
        "--workers", "2",
        "--timeout", str(LIMITS["timeout"]),
        "--body-timeout", str(LIMITS["body_timeout"]),
        "--max-body-bytes", str(LIMITS["max_body_bytes"]),
        "--max-files", str(LIMITS["max_files"]),
        "--max-file-bytes", str(LIMITS["max_file_bytes"]),
        env={"THUNDER_LINT_TOKEN": TOKEN},
    )
    yield server
    server.stop()


@pytest.fixture
def api(authed_server):
    with authed_server.client(TOKEN) as client:
        yield client
