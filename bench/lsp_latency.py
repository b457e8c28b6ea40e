"""How long after a change to a 2,000-line file the editor gets its diagnostics from `thunder-lint lsp`.

The server runs as a subprocess, driven over stdio by a minimal JSON-RPC client in this script (a thread
stamps each message as it arrives). The file is the bundled examples repeated to 2,000 lines (about a
dozen findings per copy, most in compiled functions, so every publish carries ~170 diagnostics with
related locations). After a warm-up (the first lint, the workspace index), each change is sent as an
incremental didChange and timed until the publishDiagnostics for that version arrives, one change at a
time: two kinds of edit, a character changed inside a line (the file's index summary stays the same)
and a line inserted (its summary changes: the project index is rebuilt and the open documents' facts
compared).

Baseline, measured in this run on the same text, once after each change (so under the same load as the
server): ``analyzer.lint_source`` in this process, warm (the engine alone: no project index, no LSP),
and a bare ``ast.parse``.

    python3 bench/lsp_latency.py [--changes 20] [--debounce-ms 50] [--large-workspace]

``--large-workspace`` adds this repository's packages and tests (about 300 files) to the workspace
through symlinks, so the index the server keeps up to date is that of a real project. Target
(issue 25): diagnostics within 300 ms of a change, on the 2-core machine, warm.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LINES = 2000


def make_file() -> str:
    copies = []
    n = 0
    while sum(c.count("\n") for c in copies) < LINES:
        for ex in sorted((REPO / "examples").glob("*.py")):
            copies.append(f"# --- copy {n} of {ex.name}\n" + ex.read_text(encoding="utf-8"))
        n += 1
    lines = "".join(copies).splitlines(keepends=True)[:LINES]
    text = "".join(lines)
    ast.parse(text)  # a copy cut in the middle of a statement would make the bench measure TL001 only
    return text


class Client:
    """Just enough LSP client: send, and a reader thread that queues (arrival time, message)."""

    def __init__(self, cwd: Path, env: dict):
        self.proc = subprocess.Popen([sys.executable, "-m", "analyzer.cli", "lsp"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, cwd=cwd, env=env)
        self.inbox: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    return
                if line == b"\r\n":
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            message = json.loads(out.read(length))
            self.inbox.put((time.perf_counter(), message))

    def send(self, method: str, params, request: bool = False) -> int | None:
        msg = {"jsonrpc": "2.0", "method": method, "params": params}
        if request:
            self.next_id += 1
            msg["id"] = self.next_id
        body = json.dumps(msg).encode()
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.proc.stdin.flush()
        return msg.get("id")

    def wait(self, pred, timeout: float = 120.0):
        deadline = time.perf_counter() + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise TimeoutError("no matching message from the server")
            at, msg = self.inbox.get(timeout=left)
            if msg.get("method") in ("workspace/configuration", "client/registerCapability") and "id" in msg:
                body = json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": [None] if msg["method"] ==
                                   "workspace/configuration" else None}).encode()
                self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
                self.proc.stdin.flush()
                continue
            if pred(msg):
                return at, msg


def publish_for(uri: str, version: int):
    return lambda m: (m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
                      and m["params"].get("version") == version)


def run(args) -> None:
    text = make_file()
    work = Path(tempfile.mkdtemp(prefix="lsp-bench-"))
    try:
        shutil.copytree(REPO / "examples", work / "examples")
        if args.large_workspace:
            for name in ("analyzer", "rules", "compiler", "server", "tests"):
                os.symlink(REPO / name, work / name)
        path = work / "big_module.py"
        path.write_text(text, encoding="utf-8")
        uri = path.as_uri()
        env = dict(os.environ, PYTHONPATH=str(REPO), XDG_CACHE_HOME=str(work / ".cache"))
        client = Client(work, env)
        client.send("initialize", {"processId": os.getpid(), "rootUri": work.as_uri(),
                                   "workspaceFolders": [{"uri": work.as_uri(), "name": "bench"}],
                                   "initializationOptions": {"debounceMs": args.debounce_ms},
                                   "capabilities": {}}, request=True)
        client.wait(lambda m: m.get("id") == 1)
        client.send("initialized", {})
        t0 = time.perf_counter()
        client.send("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": 1,
                                                              "text": text}})
        at, first = client.wait(publish_for(uri, 1))
        n_diags = len(first["params"]["diagnostics"])
        print(f"file: {LINES} lines, {len(text):,} characters, {n_diags} diagnostics")
        print(f"cold: open -> first diagnostics {1000 * (at - t0):.0f} ms (server started just before)")
        at, msg = client.wait(lambda m: m.get("method") == "window/logMessage" and "indexed" in m["params"]["message"])
        print(f"index: {msg['params']['message'].removeprefix('thunder-lint: ')} ({1000 * (at - t0):.0f} ms after open)")
        time.sleep(1.0)  # let the re-lint the index asked for finish

        import analyzer

        analyzer.lint_source(text, str(path))  # warm the baseline's engine too
        lint_ms: list[float] = []
        parse_ms: list[float] = []
        lines = text.split("\n")
        target = next(i for i, line in enumerate(lines) if "flat = tokens.reshape(-1)" in line)
        version = 1
        results: dict[str, list[float]] = {"character changed in a line": [], "line inserted": []}
        for i in range(args.changes):
            version += 1
            if i % 2 == 0:  # flip one character: `-1` <-> `-2` (same line count, same summary)
                col = lines[target].index("(-") + 2
                new = "2" if lines[target][col] == "1" else "1"
                lines[target] = lines[target][:col] + new + lines[target][col + 1:]
                change = {"range": {"start": {"line": target, "character": col},
                                    "end": {"line": target, "character": col + 1}}, "text": new}
                kind = "character changed in a line"
            else:  # a new comment line at the top: every line below moves, the summary changes
                lines.insert(0, f"# edit {i}")
                target += 1
                change = {"range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
                          "text": f"# edit {i}\n"}
                kind = "line inserted"
            sent = time.perf_counter()
            client.send("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                                   "contentChanges": [change]})
            at, msg = client.wait(publish_for(uri, version))
            assert len(msg["params"]["diagnostics"]) == n_diags, "the edit must not change the findings"
            results[kind].append(1000 * (at - sent))
            # the baseline, on the same text, between the changes: under the same load as the server
            current = "\n".join(lines)
            t = time.perf_counter()
            analyzer.lint_source(current, str(path))
            lint_ms.append(1000 * (time.perf_counter() - t))
            t = time.perf_counter()
            ast.parse(current)
            parse_ms.append(1000 * (time.perf_counter() - t))
            time.sleep(0.3)  # one change at a time: each measured on a quiet server
        client.send("shutdown", None, request=True)
        client.wait(lambda m: m.get("id") == client.next_id)
        client.send("exit", None)
        client.proc.wait(30)

        base = statistics.median(lint_ms)
        print(f"baseline (this process, same text, between the changes): analyzer.lint_source median {base:.0f} ms, "
              f"max {max(lint_ms):.0f} ms; ast.parse alone {statistics.median(parse_ms):.0f} ms")
        print(f"server debounce: {args.debounce_ms} ms (included in the figures below)")
        for kind, ms in results.items():
            ms = sorted(ms)
            p90 = ms[min(len(ms) - 1, int(0.9 * len(ms)))]
            print(f"change -> diagnostics, {kind}: median {statistics.median(ms):.0f} ms, p90 {p90:.0f} ms, "
                  f"max {ms[-1]:.0f} ms (n={len(ms)}); median {statistics.median(ms) / base:.2f}x lint_source, "
                  f"{statistics.median(ms) - args.debounce_ms:.0f} ms of it after the debounce")
        worst = max(max(v) for v in results.values())
        print(f"target: diagnostics within 300 ms of a change: {'met' if worst <= 300 else 'NOT met'} "
              f"(worst {worst:.0f} ms; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--changes", type=int, default=20)
    p.add_argument("--debounce-ms", type=int, default=50, help="the server's debounceMs setting (default: its default, 50)")
    p.add_argument("--large-workspace", action="store_true", help="index this repository's packages too")
    run(p.parse_args())


if __name__ == "__main__":
    main()
