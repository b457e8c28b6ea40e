"""The service's settings: limits, pool size, time limit, auth token, CORS. One frozen object per app.

The bearer token comes from ``THUNDER_LINT_TOKEN`` or from a file named by ``THUNDER_LINT_TOKEN_FILE``
(or ``--token-file``); a file keeps the secret out of process listings and environment dumps.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

TOKEN_ENV = "THUNDER_LINT_TOKEN"
TOKEN_FILE_ENV = "THUNDER_LINT_TOKEN_FILE"


# Linting cost per MiB of source on one worker of the 2-core dev machine (see server/README.md):
# the fastest, ordinary library code (bench/lint_throughput.py: ~48 MB of transformers sources in 13.3 s
# on 2 workers, about 0.55 s per MiB per worker), and the slowest, dense jitted code with findings every
# few lines (bench/large_files.py --kinds dense: about 30 s per MiB with fix edits). A request that cannot
# finish within --timeout even at the fastest rate is refused at once (413) instead of holding workers.
LINT_S_PER_MIB_FASTEST = 0.5
LINT_S_PER_MIB_SLOWEST = 30.0


class SettingsError(ValueError):
    """The service cannot start with these settings."""


@dataclass(frozen=True)
class ServerSettings:
    workers: int = 2
    timeout_s: float = 120.0  # per request (per worker share of it): room for a few hundred files with fixes
    wait_timeout_s: float = 120.0  # the longest a request waits for a free worker before a 503
    body_timeout_s: float = 30.0  # the longest the request body may stall before a 408
    max_waiting: int = 256  # requests waiting for a worker beyond this get a 503 at once
    max_body_bytes: int = 10 * 1024 * 1024
    max_files: int = 500
    max_file_bytes: int = 1024 * 1024
    # A repository sent as a gzip'd tar (server/archive.py): sized for a repository like transformers (2,951
    # files, 48 MB of sources, a 9 MB archive) with room to spare; each configurable.
    max_archive_bytes: int = 64 * 1024 * 1024  # the compressed body
    max_archive_inflated_bytes: int = 512 * 1024 * 1024  # the tar inflated (a gzip bomb stops here)
    max_archive_files: int = 20_000  # files to lint in it
    max_archive_file_bytes: int = 4 * 1024 * 1024  # per file: the CLI's --max-file-size default
    worker_memory_mb: int = 2048  # address-space cap per lint worker; 0: none
    token: str | None = field(default=None, repr=False)  # None: no auth
    cors_origins: tuple[str, ...] = ()  # empty: no CORS headers at all

    def __post_init__(self) -> None:
        for name in ("workers", "max_body_bytes", "max_files", "max_file_bytes", "max_waiting", "max_archive_bytes",
                     "max_archive_inflated_bytes", "max_archive_files", "max_archive_file_bytes"):
            if getattr(self, name) < 1:
                raise SettingsError(f"{name.replace('_', '-')} must be at least 1")
        if self.worker_memory_mb < 0:
            raise SettingsError("worker-memory-mb cannot be negative (0 means no limit)")
        for name in ("timeout_s", "wait_timeout_s", "body_timeout_s"):
            if not getattr(self, name) > 0:
                raise SettingsError(f"{name.removesuffix('_s').replace('_', '-')} must be a positive number of seconds")
        if self.token is not None and not self.token:
            raise SettingsError("the auth token is empty")


def read_token(token_file: str | None = None, environ: dict | None = None) -> str | None:
    """The bearer token: ``token_file`` if given, else $THUNDER_LINT_TOKEN_FILE, else $THUNDER_LINT_TOKEN."""
    env = os.environ if environ is None else environ
    path = token_file or env.get(TOKEN_FILE_ENV)
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                token = f.read().strip()
        except (OSError, UnicodeDecodeError) as e:
            raise SettingsError(f"cannot read the token file {path}: {getattr(e, 'strerror', None) or e}") from None
        if not token:
            raise SettingsError(f"the token file {path} is empty")
        return token
    token = env.get(TOKEN_ENV)
    if token is None:
        return None
    token = token.strip()
    if not token:
        raise SettingsError(f"${TOKEN_ENV} is set but empty")
    return token
