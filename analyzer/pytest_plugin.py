"""pytest plugin ``thunder_lint``: `pytest --thunder-lint` (or `pytest -p thunder_lint`) runs the test session
with the program's jit entry points replaced as `thunder-lint run` does (analyzer/run), and reports the trace
findings made by the code paths the tests exercised at the end of the session.

    --thunder-lint                 turn it on (loading the plugin with -p thunder_lint turns it on too)
    --thunder-lint-format FMT      the linter's formats (default: full)
    --thunder-lint-output FILE     write the report to FILE instead of the terminal summary
    --thunder-lint-strict          fail the session (exit 1) when there are findings
    --thunder-lint-observe         instead: the tests' own torch.compile runs untouched and is observed (graph
                                   breaks TL401, recompiles TL402), as `thunder-lint run --observe`
    --thunder-lint-verify          with --thunder-lint-observe: compiled calls compared with eager (TL403)

Registered as the ``pytest11`` entry point ``thunder_lint``, so every pytest of an environment where
thunder-lint is installed loads this module: it imports nothing heavy until the option is on.

With pytest-xdist (``-n 4``) the tests run in worker processes: each worker intercepts its own jit calls and
sends its findings and call count back to the controller when it finishes (xdist's ``workeroutput``); the
controller adds them up, a location hit in several workers once with the calls summed. A worker that ends
without sending them (it crashed) is named in a warning, never silently counted as "0 jitted calls".
"""
from __future__ import annotations

import os

import pytest

_REPORT = "thunder_lint_report"
_NAMES = ("thunder_lint", "analyzer.pytest_plugin")
_WORKER_KEY = "thunder_lint"  # in xdist's workeroutput: {"diagnostics": [Diagnostic JSON], "calls": N}


def pytest_addoption(parser):
    from .report import FORMATS

    group = parser.getgroup("thunder-lint", "sharp edges found while the tests run (thunder-lint)")
    group.addoption("--thunder-lint", action="store_true", default=False,
                    help="replace the jit entry points the tests call with thunder-lint's checked compiler and "
                         "report the trace findings at the end of the session")
    group.addoption("--thunder-lint-format", choices=FORMATS, default="full", help="report format (default: full)")
    group.addoption("--thunder-lint-output", metavar="FILE", help="write the report to FILE")
    group.addoption("--thunder-lint-strict", action="store_true", default=False,
                    help="fail the session when there are findings")
    group.addoption("--thunder-lint-observe", action="store_true", default=False,
                    help="observe the tests' own torch.compile (graph breaks, recompiles) instead of replacing it")
    group.addoption("--thunder-lint-verify", action="store_true", default=False,
                    help="with --thunder-lint-observe: run each compiled graph call again eagerly and compare")


def _enabled(config) -> bool:
    if config.getoption("thunder_lint") or config.getoption("thunder_lint_observe"):
        return True
    requested = getattr(config.option, "plugins", None) or []
    return any(name in _NAMES for name in requested)


def pytest_configure(config):
    if not _enabled(config):
        return
    import contextlib

    stack = contextlib.ExitStack()
    config.thunder_lint_workers = {}  # xdist controller: worker id -> what it sent (None: nothing)
    if config.getoption("thunder_lint_observe"):
        from .run.observe import Observer, observing

        collector = Observer(verify=config.getoption("thunder_lint_verify"))
        stack.enter_context(observing(collector))
        config.stash_thunder_lint = (collector, stack)
        return
    from .run.collector import Collector
    from .run.intercept import intercepting

    collector = Collector()
    stack.enter_context(intercepting(collector))
    config.stash_thunder_lint = (collector, stack)  # read back at the end of the session


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's hook: absent without it
def pytest_testnodedown(node, error):
    workers = getattr(node.config, "thunder_lint_workers", None)
    if workers is None:
        return
    output = getattr(node, "workeroutput", None) or {}
    name = (getattr(node, "gateway", None) and node.gateway.id) or str(len(workers))
    workers[name] = output.get(_WORKER_KEY)


def _merged(found: list, workers: dict) -> tuple[list, int]:
    """The controller's findings plus every worker's, one per location (the calls summed); the workers' calls."""
    from dataclasses import replace

    from .diagnostics import Diagnostic

    by_key = {}
    sent = [found] + [[Diagnostic.from_json(d) for d in w["diagnostics"]] for w in workers.values() if w]
    for group in sent:
        for d in group:
            key = (d.code, d.path, d.line, d.column)
            seen = by_key.get(key)
            by_key[key] = d if seen is None else replace(seen, calls=(seen.calls or 0) + (d.calls or 0))
    calls = sum(w["calls"] for w in workers.values() if w)
    return sorted(by_key.values(), key=Diagnostic.sort_key), calls


def pytest_sessionfinish(session, exitstatus):
    config = session.config
    held = getattr(config, "stash_thunder_lint", None)
    if held is None:
        return
    collector, stack = held
    stack.close()
    del config.stash_thunder_lint
    from . import config as config_mod
    from .report import render
    from .run.report import filter_trace
    from .runner import Settings

    settings = Settings.from_config(config_mod.discover([str(config.rootpath)]))
    observe = config.getoption("thunder_lint_observe")
    own, own_calls = _observed(collector, settings) if observe else (collector.diagnostics(), collector.calls)
    if hasattr(config, "workerinput"):  # an xdist worker: the controller reports what every worker found
        config.workeroutput[_WORKER_KEY] = {"diagnostics": [d.to_json() for d in own], "calls": own_calls}
        return
    workers = config.thunder_lint_workers
    raw, calls = _merged(own, workers)
    calls += own_calls
    silent = sorted(name for name, got in workers.items() if got is None)
    found = filter_trace(raw, settings)
    fmt = config.getoption("thunder_lint_format")
    body = render(found, fmt, root=os.getcwd(), sources=_sources(found) if fmt == "full" else None)
    output = config.getoption("thunder_lint_output")
    if output:
        with open(output, "w", encoding="utf-8") as f:
            f.write(body)
    setattr(config, _REPORT, (found, body, output, calls, len(workers), silent))
    config.thunder_lint_observed = getattr(collector, "summary", "")  # the closing lines of --thunder-lint-observe
    if found and config.getoption("thunder_lint_strict") and session.exitstatus == 0:
        session.exitstatus = 1  # pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    report = getattr(config, _REPORT, None)
    if report is None:
        return
    found, body, output, calls, n_workers, silent = report
    tr = terminalreporter
    tr.section("thunder-lint")
    if silent:  # an xdist worker that died: its calls and findings are missing from the report
        tr.write_line(f"thunder-lint: warning: {len(silent)} of {n_workers} pytest-xdist worker(s) ({', '.join(silent)}) "
                      "ended without sending their findings (crashed?); the report misses their jitted calls",
                      yellow=True)
    if output:
        tr.write_line(f"{len(found)} trace finding{'s' if len(found) != 1 else ''} written to {output}")
    elif body:
        tr.write(body if body.endswith("\n") else body + "\n")
    across = f" in {n_workers} pytest-xdist workers" if n_workers else ""
    what = "compiled graph call" if config.getoption("thunder_lint_observe") else "jitted call"
    tr.write_line(f"thunder-lint: {calls} {what}{'s' if calls != 1 else ''}{across}, "
                  f"{len(found)} trace finding{'s' if len(found) != 1 else ''}"
                  + (" (--thunder-lint-strict: the session fails)" if found and config.getoption("thunder_lint_strict")
                     else ""))
    for line in getattr(config, "thunder_lint_observed", "").splitlines():
        tr.write_line(f"thunder-lint --observe: {line}.")


def _observed(observer, settings):
    """--thunder-lint-observe: the observed findings (each naming the static rule that predicted it), and the
    number of compiled graph calls."""
    from .run.observe import findings
    from .run.report import filter_trace, static_findings

    sites = findings.observed_sites(observer)
    static, _ = static_findings(findings.user_files(observer), settings)
    observer.summary = findings.compare_static(sites, static, findings.traced_points(observer)).line()
    if observer.verify:
        observer.summary += "\n" + findings.verify_line(observer)
    return filter_trace(findings.diagnostics(sites, static), settings), sum(g.calls for g in observer.graphs)


def _sources(found) -> dict:
    sources = {}
    for d in found:
        if d.path not in sources:
            try:
                with open(d.path, encoding="utf-8") as f:
                    sources[d.path] = f.read()
            except OSError:
                pass
    return sources
