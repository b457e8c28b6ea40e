#!/usr/bin/env python3
"""A whole repository through the service: `tar czf - . | curl ... POST /analyze` against the CLI on the same tree.

    python3 bench/server_archive.py [--version 5.23.0] [--workers 2]

Uses the transformers corpus of bench/lint_throughput.py (downloaded there the first time). Measures in the same
run: the CLI (`thunder-lint --no-cache --output-format json`, a fresh process) and one POST of the tree as a gzip'd
tar to a real `thunder-lint serve` on loopback (warm: one small request first), then checks the findings are
equal. Prints the archive's size, both times and their ratio (issue 32's target: within 2x the CLI's time).
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
sys.path.insert(0, str(REPO / "tests" / "server"))

from lint_throughput import DEFAULT_CORPUS, DEFAULT_VERSION, fetch_corpus  # noqa: E402
from server_helpers import ServerProcess  # noqa: E402


def _tar_gz(root: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
        tar.add(root, arcname=".")
    return buf.getvalue()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--version", default=DEFAULT_VERSION)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    src = fetch_corpus(DEFAULT_CORPUS, args.version)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    t = time.perf_counter()
    cli = subprocess.run([sys.executable, "-m", "analyzer.cli", "--no-cache", "--output-format", "json", "--exit-zero", "."],
                         cwd=src, capture_output=True, env=env, check=True)
    cli_s = time.perf_counter() - t
    cli_findings = json.loads(cli.stdout)
    body = _tar_gz(src)
    server = ServerProcess("--workers", str(args.workers), "--timeout", "600", "--wait-timeout", "600")
    try:
        with server.client(timeout=900) as c:
            c.post("/analyze", json={"files": [{"path": "a.py", "content": "x = 1\n"}]})  # warm
            t = time.perf_counter()
            r = c.post("/analyze", content=body, headers={"Content-Type": "application/gzip"})
            http_s = time.perf_counter() - t
    finally:
        server.stop()
    if r.status_code != 200:
        print(f"POST /analyze: {r.status_code} {r.text[:500]}")
        return 1
    got = r.json()["diagnostics"]
    key = lambda d: (d["path"], d["line"], d["column"], d["code"], d["message"])  # noqa: E731
    same = sorted(map(key, got)) == sorted(map(key, cli_findings))
    n_files = len(r.json()["files"])
    print(f"transformers {args.version}: {n_files} files sent as a {len(body) / 2**20:.1f} MiB tar.gz")
    print(f"CLI (--no-cache, 1 process tree)      {cli_s:7.2f} s   {len(cli_findings)} findings")
    print(f"POST /analyze (tar.gz, {args.workers} workers)   {http_s:7.2f} s   {len(got)} findings   "
          f"= {http_s / cli_s:.2f}x the CLI (target 2x)")
    print(f"findings equal: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
