"""``thunder-lint serve``: run the HTTP service under uvicorn.

    thunder-lint serve [--host 127.0.0.1] [--port 8000] [--workers N] [--timeout S] [--wait-timeout S]
                       [--body-timeout S] [--header-timeout S] [--max-body-bytes N] [--max-files N] [--max-file-bytes N]
                       [--max-archive-bytes N] [--max-archive-inflated-bytes N] [--max-archive-files N] [--max-archive-file-bytes N]
                       [--worker-memory-mb MB] [--token-file F] [--cors-origin O ...] [--log-level L]

Auth: a token from --token-file, $THUNDER_LINT_TOKEN_FILE or $THUNDER_LINT_TOKEN turns bearer auth on.
Once listening, one JSON line ``{"level": "info", "logger": "thunder_lint", "event": "serving", "url":
"http://HOST:PORT", "message": "serving on http://HOST:PORT"}`` goes to stderr, like every other log line
(with --port 0 it carries the port the system chose; ``serving_url`` reads it). Exit 0 after a clean shutdown, 2 for bad options.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence

from . import fs_audit
from .resources import default_workers
from .settings import ServerSettings, SettingsError, read_token


def _positive_int(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return n


def _port(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {value!r}") from None
    if not 0 <= n <= 65535:
        raise argparse.ArgumentTypeError("a port is between 0 and 65535")
    return n


def _seconds(value: str) -> float:
    try:
        s = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {value!r}") from None
    if not s > 0 or s == float("inf"):
        raise argparse.ArgumentTypeError("must be a positive number of seconds")
    return s


def serving_line(url: str) -> str:
    """The "listening" log line: JSON like the other log lines, so a log pipeline parses every line."""
    return json.dumps({"level": "info", "logger": "thunder_lint", "event": "serving", "url": url, "message": f"serving on {url}"})


def serving_url(line: str) -> str | None:
    """The URL from a :func:`serving_line`, else None."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry.get("url") if isinstance(entry, dict) and entry.get("event") == "serving" else None


def build_parser() -> argparse.ArgumentParser:
    d = ServerSettings()
    p = argparse.ArgumentParser(prog="thunder-lint serve", description="Serve the linter over HTTP (POST /analyze).")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1; 0.0.0.0 for all)")
    p.add_argument("--port", type=_port, default=8000, help="port (default: 8000; 0 picks a free one)")
    p.add_argument("--workers", type=_positive_int, default=None, help="lint worker processes (default: the CPUs the container's cgroup allows, "
                   "and no more than its memory limit holds at --worker-memory-mb each)")
    p.add_argument("--timeout", type=_seconds, default=d.timeout_s, help=f"seconds a request may lint for (default: {d.timeout_s:g})")
    p.add_argument("--wait-timeout", type=_seconds, default=d.wait_timeout_s,
                   help=f"seconds a request may wait for a free worker before a 503 (default: {d.wait_timeout_s:g})")
    p.add_argument("--header-timeout", type=_seconds, default=10.0,
                   help="seconds a connection may take to send a request's headers before a 408 and close (default: 10)")
    p.add_argument("--body-timeout", type=_seconds, default=d.body_timeout_s,
                   help=f"seconds the request body may stall before a 408 (default: {d.body_timeout_s:g})")
    p.add_argument("--max-body-bytes", type=_positive_int, default=d.max_body_bytes, help=f"largest request body (default: {d.max_body_bytes})")
    p.add_argument("--max-files", type=_positive_int, default=d.max_files, help=f"most files per request (default: {d.max_files})")
    p.add_argument("--max-file-bytes", type=_positive_int, default=d.max_file_bytes, help=f"largest file (default: {d.max_file_bytes})")
    p.add_argument("--max-archive-bytes", type=_positive_int, default=d.max_archive_bytes,
                   help=f"largest gzip'd tar body, a whole repository (default: {d.max_archive_bytes})")
    p.add_argument("--max-archive-inflated-bytes", type=_positive_int, default=d.max_archive_inflated_bytes,
                   help=f"largest size a tar.gz may inflate to (default: {d.max_archive_inflated_bytes})")
    p.add_argument("--max-archive-files", type=_positive_int, default=d.max_archive_files,
                   help=f"most files to lint in a tar.gz (default: {d.max_archive_files})")
    p.add_argument("--max-archive-file-bytes", type=_positive_int, default=d.max_archive_file_bytes,
                   help=f"largest file in a tar.gz (default: {d.max_archive_file_bytes})")
    p.add_argument("--worker-memory-mb", type=int, default=d.worker_memory_mb, metavar="MB",
                   help=f"address-space limit per lint worker, 0 for none (default: {d.worker_memory_mb})")
    p.add_argument("--token-file", help="a file holding the bearer token clients must send (or set $THUNDER_LINT_TOKEN[_FILE])")
    p.add_argument("--cors-origin", action="append", default=[], metavar="ORIGIN", help="allow browser calls from ORIGIN (default: none)")
    p.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    return p


class _JsonFormatter(logging.Formatter):
    """Access lines are JSON already; other records become {"level", "logger", "message"} lines."""

    def format(self, record: logging.LogRecord) -> str:
        if record.name == "thunder_lint.access":
            return record.getMessage()
        entry = {"level": record.levelname.lower(), "logger": record.name, "message": record.getMessage()}
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def _log_config(level: str) -> dict:
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    logger = {"handlers": ["stderr"], "level": level.upper(), "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": _JsonFormatter}},
        "handlers": {"stderr": handler},
        "loggers": {name: logger for name in ("uvicorn", "uvicorn.error", "thunder_lint")},
    }


def serve_main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as e:  # --help (0) or a usage error (2): a return code, as the contract says
        return e.code if isinstance(e.code, int) else 2
    try:
        settings = ServerSettings(
            workers=args.workers or default_workers(args.worker_memory_mb),
            timeout_s=args.timeout,
            wait_timeout_s=args.wait_timeout,
            body_timeout_s=args.body_timeout,
            max_body_bytes=args.max_body_bytes,
            max_files=args.max_files,
            max_file_bytes=args.max_file_bytes,
            max_archive_bytes=args.max_archive_bytes,
            max_archive_inflated_bytes=args.max_archive_inflated_bytes,
            max_archive_files=args.max_archive_files,
            max_archive_file_bytes=args.max_archive_file_bytes,
            worker_memory_mb=args.worker_memory_mb,
            token=read_token(args.token_file),
            cors_origins=tuple(args.cors_origin),
        )
    except SettingsError as e:
        print(f"thunder-lint serve: error: {e}", file=sys.stderr)
        return 2

    import uvicorn

    from .app import create_app
    from .header_timeout import UvicornChanged, check_uvicorn, protocol_with_timeout

    try:
        check_uvicorn()
    except UvicornChanged as e:
        print(f"thunder-lint serve: error: {e}", file=sys.stderr)
        return 2

    class _Server(uvicorn.Server):
        async def startup(self, sockets=None):
            await super().startup(sockets=sockets)
            if self.started:
                for server in self.servers:
                    for sock in server.sockets:
                        host, port = sock.getsockname()[:2]
                        print(serving_line(f"http://{host}:{port}"), file=sys.stderr, flush=True)
                fs_audit.arm_if_enabled()  # the pool is up: what follows serves requests

    config = uvicorn.Config(
        create_app(settings),
        host=args.host,
        port=args.port,
        access_log=False,  # our own structured access log replaces uvicorn's
        log_config=_log_config(args.log_level),
        server_header=False,
        http=protocol_with_timeout(args.header_timeout),  # h11 with a header-read timeout
        timeout_graceful_shutdown=10,
    )
    server = _Server(config)
    try:
        server.run()
    except SystemExit as e:  # uvicorn exits this way when it cannot bind (port in use, bad address)
        print(f"thunder-lint serve: error: could not serve on {args.host}:{args.port} (exit {e.code})", file=sys.stderr)
        return 2
    if not server.started:
        print("thunder-lint serve: error: the service did not start (see the log above)", file=sys.stderr)
        return 2
    return 0
