"""``thunder-lint run --observe [--verify]``: run the program with its own torch.compile watched, then report.

The report is the linter's: TL401/TL402/TL403 findings (origin "trace", with their counts) merged with the
static findings for the program's files that dynamo traced, in every --format, on stderr or in --output-file;
then, in the text formats, the observed totals and the static rules' precision/recall line.
"""
from __future__ import annotations

import os
import sys
import types


def run_observed(args, target: str, program_args: list[str], settings, *, verify: bool, emit, alarm) -> int:
    """``emit`` and ``alarm`` are the run command's own (report output, --max-seconds), passed in: imports point
    from the command to here, never back."""
    from ... import cli_common
    from ...report import render
    from .. import program
    from ..collector import StopRun
    from ..report import filter_trace, merge, static_findings
    from ...dynamic.user_code import is_user_file
    from . import findings
    from .hooks import observing
    from .observer import Observer

    observer = Observer(verify=verify)
    stopper = types.SimpleNamespace(stopped=None)
    stop_alarm = alarm(args.max_seconds, stopper, StopRun)
    try:
        with observing(observer):
            outcome = program.run(target, program_args, module=bool(args.module))
    finally:
        stop_alarm()
    program.flush_streams()

    sites = findings.observed_sites(observer)
    files = findings.user_files(observer) | {s.path for s in sites if os.path.isfile(s.path) and is_user_file(s.path)}
    main = program.main_file(target, bool(args.module))
    if main:
        files.add(main)
    # The predictions also read a library's files where something was observed (a transformers model's break):
    # those files are linted for that, and their static findings are not reported.
    library = {s.path for s in sites if os.path.isfile(s.path) and not is_user_file(s.path)}
    static, errors = static_findings(files | library, settings)
    own = [d for d in static if is_user_file(d.path)]
    trace = filter_trace(findings.diagnostics(sites, static), settings)
    diagnostics = merge(trace, own if args.with_static else [])
    for e in errors:
        print(f"thunder-lint: error: {e}", file=sys.stderr)

    body = render(diagnostics, args.format, root=os.getcwd(),
                  sources=cli_common.sources_for(diagnostics, {}) if args.format == "full" else None)
    tail = []
    if not args.quiet:
        graphs = len(observer.graphs)
        calls = sum(g.calls for g in observer.graphs)
        tail.append(f"thunder-lint run --observe: {graphs} graph{'s' if graphs != 1 else ''} compiled, {calls} "
                    f"graph call{'s' if calls != 1 else ''}; " + _counts(sites))
        tail.append("thunder-lint run --observe: " + findings.compare_static(sites, static, findings.traced_points(observer)).line() + ".")
        if verify:
            tail.append("thunder-lint run --observe: " + findings.verify_line(observer) + ".")
        if outcome.summary:
            tail.append(f"thunder-lint run: {outcome.summary}.")
    if args.format in ("full", "concise"):
        if not args.quiet:
            head = cli_common.summary_lines(diagnostics, fixed=None, unsafe_fixes=False)
            body = body + ("\n" if body and args.format == "full" else "") + "\n".join(head + tail) + "\n"
        emit(args.output_file, body)
    else:
        emit(args.output_file, body)
        if tail:
            print("\n".join(tail), file=sys.stderr)

    if outcome.failed:
        return outcome.exit_code or 1  # the program's own status, as `run` passes it through (issue 35)
    if errors:
        return 2
    if outcome.kind == "interrupted":
        return 130
    return 0 if (not diagnostics or args.exit_zero) else 1  # the linter's statuses, as `run` returns them


def _counts(sites) -> str:
    parts = []
    for code, what in (("TL401", "graph-break site"), ("TL402", "recompile site"), ("TL403", "differs-from-eager site")):
        n = sum(1 for s in sites if s.code == code)
        parts.append(f"{n} {what}{'s' if n != 1 else ''}")
    return ", ".join(parts) + "."
