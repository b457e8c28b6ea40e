"""``thunder-lint run [OPTIONS] script.py [ARGS...]`` / ``thunder-lint run [OPTIONS] -m module [ARGS...]``.

The program runs as python would run it, with its jit entry points replaced (intercept.py); when it ends,
the trace findings (one per location, with the number of calls that hit it) and the static findings for the
program's own files are reported in the linter's formats, on stderr or in --output-file, so the program's
stdout is its own. Exit status: when the program itself failed, its own status (what `python script.py` would
have exited with: its `sys.exit` code, 1 for an uncaught exception); otherwise the linter's (0 clean, 1 findings,
2 only for thunder-lint's own usage or internal errors); 130 when it was interrupted.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys

from ..report import FORMATS, render

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="thunder-lint run", usage="thunder-lint run [OPTIONS] (script.py | -m module) [ARGS...]",
        description="Run a Python program with its jit entry points (torch.compile, nn.Module.compile, thunder.jit, "
        "compiler.jit, analyzer.jit) replaced by thunder-lint's compiler with the trace checks on; report the "
        "sharp edges found, merged with the static findings for the program's files, when it ends.")
    p.add_argument("-m", dest="module", metavar="MODULE", help="run a library module as a script, as `python -m`")
    sel = p.add_argument_group("rule selection (as the linter)")
    sel.add_argument("--select", action="append", metavar="CODES")
    sel.add_argument("--ignore", action="append", metavar="CODES")
    sel.add_argument("--extend-select", action="append", metavar="CODES")
    out = p.add_argument_group("output")
    out.add_argument("--format", choices=FORMATS, default="full", help="output format (default: full)")
    out.add_argument("--output-file", "-o", metavar="FILE", help="write the report to FILE (default: stderr)")
    out.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    out.add_argument("--quiet", "-q", action="store_true", help="no summary lines")
    run = p.add_argument_group("running")
    run.add_argument("--config", metavar="PYPROJECT", help="use this pyproject.toml instead of searching for one")
    run.add_argument("--with-static", action=argparse.BooleanOptionalAction, default=True,
                     help="also report the static findings for the program's files (default: on)")
    run.add_argument("--max-seconds", type=float, metavar="S", help="stop the program after S seconds and report")
    run.add_argument("--max-calls", type=int, metavar="N", help="stop the program at its N+1-th jitted call and report")
    obs = p.add_argument_group("observing the program's own torch.compile (analyzer/run/observe)")
    obs.add_argument("--observe", action="store_true",
                     help="run with the program's own torch.compile (backend and options untouched) and report its graph "
                          "breaks (TL401) and recompiles (TL402) at the program's lines")
    obs.add_argument("--verify", action="store_true",
                     help="with --observe: run each compiled graph call again eagerly and report the first line whose "
                          "value differs (TL403)")
    return p


_VALUED = {"-m", "--select", "--ignore", "--extend-select", "--format", "--output-file", "-o", "--config",
           "--max-seconds", "--max-calls"}


def split_argv(argv: list[str]) -> tuple[list[str], list[str]]:
    """(our options, the program's arguments): ours end at the script, or right after `-m MODULE`."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            return argv[:i], argv[i + 1:]
        if a == "-m":
            return argv[:i + 2], argv[i + 2:]
        if a.startswith("-m") and len(a) > 2 and not a.startswith("--"):  # -mpkg.mod, as python accepts
            return argv[:i] + ["-m", a[2:]], argv[i + 1:]
        if not a.startswith("-") or a == "-":
            return argv[:i + 1], argv[i + 1:]
        i += 2 if a in _VALUED else 1
    return argv, []


def cmd_run(argv: list[str]) -> int:
    from .. import cli_common
    from ..runner import Settings
    from . import program
    from .collector import Collector, StopRun
    from .intercept import intercepting
    from .report import filter_trace, merge, shown_path, static_findings

    ours, program_args = split_argv(list(argv))
    p = build_parser()
    p.add_argument("script", nargs="?", help="the program to run")
    args = p.parse_args(ours)
    if args.module and args.script:  # `-m mod` then a stray positional cannot happen (split_argv); be explicit
        p.error("give a script or -m MODULE, not both")
    if not args.module and not args.script:
        p.error("give the program to run: a script path or -m MODULE")
    if args.max_calls is not None and args.max_calls < 0:
        p.error("--max-calls must be >= 0")
    if args.verify and not args.observe:
        p.error("--verify needs --observe")
    if args.observe and args.max_calls is not None:
        p.error("--max-calls counts thunder-lint's jitted calls: not with --observe (use --max-seconds)")
    target = args.module or args.script
    if args.script and not os.path.isfile(args.script):
        p.error(f"cannot open {args.script!r}: no such file")

    cfg = cli_common.effective_config(args, [os.getcwd() if args.module else args.script])
    cli_common.validate_selection(cfg)
    settings = Settings.from_config(cfg)
    if args.observe:
        from .observe.session import run_observed

        return run_observed(args, target, program_args, settings, verify=args.verify, emit=_emit, alarm=_alarm)

    collector = Collector(max_calls=args.max_calls)
    stop_alarm = _alarm(args.max_seconds, collector, StopRun)
    try:
        with intercepting(collector):
            outcome = program.run(target, program_args, module=bool(args.module))
    finally:
        stop_alarm()
    program.flush_streams()

    timings = os.environ.get("THUNDER_LINT_RUN_TIMINGS")  # bench/run_overhead.py: first-call cost per function
    if timings:
        import json

        with open(timings, "w", encoding="utf-8") as f:
            json.dump({"first_call_seconds": collector.trace_seconds, "calls": collector.calls}, f)
    trace = filter_trace(collector.diagnostics(), settings)
    errors: list[str] = []
    static: list = []
    if args.with_static:
        from ..dynamic.user_code import is_user_file

        # (a TL003 about a library's function may sit in the library's file: that file is not the program's)
        files = set(collector.source_files) | {d.path for d in trace if os.path.isfile(d.path) and is_user_file(d.path)}
        main = program.main_file(target, bool(args.module))
        if main:
            files.add(main)
        static, errors = static_findings(files, settings)
    diagnostics = merge(trace, static)
    for e in errors:
        print(f"thunder-lint: error: {e}", file=sys.stderr)

    body = render(diagnostics, args.format, root=os.getcwd(),
                  sources=cli_common.sources_for(diagnostics, {}) if args.format == "full" else None)
    if args.format in ("full", "concise") and not args.quiet:
        lines = cli_common.summary_lines(diagnostics, fixed=None, unsafe_fixes=False)
        n_trace = sum(1 for d in diagnostics if d.origin == "trace")
        lines.append(f"thunder-lint run: {collector.calls} jitted call{'s' if collector.calls != 1 else ''} of "
                     f"{len(collector.functions)} jitted function{'s' if len(collector.functions) != 1 else ''}; "
                     f"{n_trace} trace finding{'s' if n_trace != 1 else ''}, {len(diagnostics) - n_trace} static.")
        if outcome.summary:
            lines.append(f"thunder-lint run: {outcome.summary}.")
        body = body + ("\n" if body and args.format == "full" else "") + "\n".join(lines) + "\n"
    _emit(args.output_file, body)
    if outcome.summary and not args.quiet and args.format not in ("full", "concise"):
        print(f"thunder-lint run: {outcome.summary}.", file=sys.stderr)

    if outcome.failed:
        return outcome.exit_code or EXIT_FINDINGS  # the program's own status, never mistaken for a usage error
    if outcome.kind == "interrupted":
        return 130
    if errors:
        return EXIT_ERROR
    return EXIT_CLEAN if (not diagnostics or args.exit_zero) else EXIT_FINDINGS


def _emit(output_file: str | None, text: str) -> None:
    if output_file:
        from ..cli_common import UsageError

        try:
            with open(output_file, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
        except OSError as e:
            raise UsageError(f"cannot write the report to {output_file}: {e.strerror or e}") from None
    else:
        sys.stderr.write(text)
        sys.stderr.flush()


def _alarm(seconds: float | None, collector, stop_error):
    """--max-seconds: SIGALRM raises StopRun in the main thread, wherever the program is. Returns the undo."""
    if not seconds or not hasattr(signal, "setitimer"):
        return lambda: None

    def on_alarm(signum, frame):
        collector.stopped = f"--max-seconds {seconds:g} reached"
        raise stop_error(collector.stopped)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)

    def undo():
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)

    return undo
