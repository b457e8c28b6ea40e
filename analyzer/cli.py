"""``thunder-lint``: the command line, after ruff's conventions.

    thunder-lint [PATHS...] [--select/--ignore/--extend-select CODES] [--fix [--unsafe-fixes]] [--diff]
                 [--show-fixes] [--statistics] [--format FMT] [--output-file F] [--exit-zero]
                 [--stdin-filename NAME] [--force-exclude] [--index-whole-project] [--no-cache]
                 [--max-file-size SIZE] [-j N]
    thunder-lint rule TL101      the rule's documentation
    thunder-lint rules           the table of rules
    thunder-lint serve ...       the HTTP service
    thunder-lint lsp             the Language Server, over stdio (analyzer/lsp; docs/editors.md)
    thunder-lint run [OPTIONS] script.py [ARGS...] | -m module [ARGS...]
                                 run a program with its jit calls checked (analyzer/run)

Exit status: 0 no findings, 1 findings (or, with --diff, fixes to show), 2 usage or internal error.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Sequence

from . import config as config_mod
from .cli_common import UsageError, effective_config, plural, sources_for, summary_lines, validate_selection  # noqa: F401
from .diagnostics import Diagnostic
from .project.index import LIBRARY_DEFAULT_NOTE
from .report import FORMATS, render, render_statistics
from .version import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
STDIN_DEFAULT_NAME = "<stdin>"


# Every subcommand `main` dispatches, as `--help` lists them (tests/cli check the two agree).
SUBCOMMANDS = (
    ("check [PATHS...]", "lint, the default: `thunder-lint PATHS` is the same"),
    ("rule CODE", "a rule's docs"),
    ("rules", "the table of rules"),
    ("run [OPTIONS] (script.py | -m module) [ARGS...]",
     "run a program with its jit calls checked, then report the trace and static findings"),
    ("serve", "the HTTP service"),
    ("lsp", "the Language Server (stdio), for editors"),
)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="thunder-lint",
        description="Find the places where compiled PyTorch code can silently differ from eager PyTorch.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="subcommands (each with its own --help):\n"
        + "".join(f"  thunder-lint {use}\n      {what}\n" for use, what in SUBCOMMANDS)
        + "\nexit status: 0 clean, 1 findings, 2 usage or internal error",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders to lint (default: .); `-` reads stdin")
    sel = p.add_argument_group("rule selection (codes, prefixes such as TL1, or ALL; comma-separated)")
    sel.add_argument("--select", action="append", metavar="CODES", help="lint only these rules (replaces the config's select and ignore)")
    sel.add_argument("--ignore", action="append", metavar="CODES", help="do not report these rules")
    sel.add_argument("--extend-select", action="append", metavar="CODES", help="add these rules to the selection")
    fix = p.add_argument_group("fixes")
    fix.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    fix.add_argument("--unsafe-fixes", action=argparse.BooleanOptionalAction, default=None,
                     help="also apply (with --fix) or show (with --diff) unsafe fixes (default: the config's `unsafe-fixes`, else off)")
    fix.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; write nothing")
    fix.add_argument("--show-fixes", action="store_true", help="list each finding's fixes and their edits")
    fix.add_argument("--fix-only", action="store_true", help="apply fixes, report nothing of what remains (exit 0 unless --exit-non-zero-on-fix)")
    fix.add_argument("--exit-non-zero-on-fix", action="store_true", help="exit 1 when a fix was applied, even if nothing remains")
    fix.add_argument("--add-noqa", action="store_true", help="add a `# noqa: CODE` comment to every line with a finding")
    out = p.add_argument_group("output")
    out.add_argument("--output-format", "--format", dest="format", choices=FORMATS, default=None,
                     help="output format (default: $THUNDER_LINT_OUTPUT_FORMAT, else the config's `output-format`, else full)")
    out.add_argument("--show-settings", action="store_true", help="print the settings the run would use, and exit")
    out.add_argument("--show-files", action="store_true", help="print the files the run would lint, and exit")
    out.add_argument("--output-file", "-o", metavar="FILE", help="write the report to FILE instead of stdout")
    out.add_argument("--statistics", action="store_true", help="print a count per rule instead of the findings")
    out.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    out.add_argument("--quiet", "-q", action="store_true", help="no summary lines, no progress bar")
    run = p.add_argument_group("running")
    run.add_argument("--stdin-filename", metavar="NAME", help="read the source from stdin and report it as NAME")
    run.add_argument("--config", action="append", metavar="FILE | KEY=VALUE",
                     help="use this config file (pyproject.toml, thunder-lint.toml) instead of searching for one; "
                     "a TOML `key = value` pair overrides that key (repeatable)")
    run.add_argument("--exclude", action="append", metavar="GLOBS", help="folders and files to skip, replacing the config's `exclude`")
    run.add_argument("--extend-exclude", action="append", metavar="GLOBS", help="more folders and files to skip")
    run.add_argument("--respect-gitignore", action=argparse.BooleanOptionalAction, default=None,
                     help="skip what .gitignore ignores (default: on)")
    run.add_argument("--force-exclude", action="store_true",
                     help="apply the config's exclude to files named on the command line too (for pre-commit)")
    run.add_argument("--index-whole-project", action="store_true",
                     help="read the whole project (from its root) for the project index, report only the named paths: "
                          "pre-commit splits the staged files over several calls, and a compile call in one of them "
                          "decides findings in another")
    run.add_argument("--watch", "-w", action="store_true", help="lint again whenever a linted file changes (Ctrl-C stops)")
    run.add_argument("--no-cache", action="store_true", help="neither read nor write the results cache")
    run.add_argument("--max-file-size", type=_size, default=None, metavar="SIZE",
                     help="files larger than this are reported as TL002, not parsed (default: 4MiB; e.g. 10MB)")
    run.add_argument("--cache-dir", metavar="DIR", help="where the results cache lives (default: $THUNDER_LINT_CACHE_DIR, "
                     "else the config's `cache-dir`, else .thunder-lint-cache at the project root)")
    run.add_argument("--assume-compiled", action="append", metavar="PATTERN",
                     help="treat functions whose qualified name (package.module.Class.method) matches this glob as "
                     "compiled; without it (and `assume-compiled` in the config), a project with no compile call has "
                     "every nn.Module forward linted as compiled; `--assume-compiled ''` turns that off")
    run.add_argument("--target", choices=config_mod.TARGETS, default=None,
                     help="the compiler messages speak of (default: the config's, else each function's own)")
    run.add_argument("-j", "--jobs", type=_jobs, default=None, metavar="N", help="worker processes (default: one for a project of up to 8 MB of sources, else all cores)")
    p.add_argument("--version", action="version", version=f"thunder-lint {__version__}")
    return p


def _jobs(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of jobs, got {value!r}") from None
    if n < 0:
        raise argparse.ArgumentTypeError("the number of jobs cannot be negative")
    return n  # 0 means "all cores"


def _size(value: str) -> int:
    from .file_reader import parse_size

    try:
        return parse_size(value)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


# --- the pieces of a lint run --------------------------------------------------------------------------
def _encoding_of(data: bytes) -> str:
    import tokenize
    from io import BytesIO

    try:
        return tokenize.detect_encoding(BytesIO(data).readline)[0]
    except SyntaxError:
        return "utf-8"


def _unified_diff(path: str, before: str, after: str) -> str:
    import difflib

    return "".join(
        difflib.unified_diff(before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{path}", f"b/{path}")
    )


def _write_fixed(path: str, digest: bytes | None, fixed: str) -> str | None:
    """Write fixed text back in the file's own encoding, unless the file changed since it was read."""
    from .cache import content_hash
    from .file_reader import Unreadable, read_bytes

    try:
        current = read_bytes(path, sys.maxsize)  # linted already: its size was allowed
    except Unreadable as e:
        return f"{path}: not fixed: {e}"
    if digest is not None and content_hash(current) != digest:
        return f"{path}: not fixed: the file changed while it was being linted"
    from .parsing import parses

    if not parses(fixed):  # the engine promises this; a file on disk is worth checking twice
        return f"{path}: not fixed: the fixed text would not parse"
    try:
        data = fixed.encode(_encoding_of(current))
    except (UnicodeEncodeError, LookupError) as e:
        return f"{path}: not fixed: {e}"
    from .fix_writer import write_fixed

    problem = write_fixed(path, digest, data)  # safe temp file, mode, links: see there
    return None if problem is None else f"{path}: not fixed: {problem}"


# --- subcommands -------------------------------------------------------------------------------------
def cmd_rule(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="thunder-lint rule", description="Print a rule's documentation.")
    p.add_argument("code", help="a rule code, e.g. TL101")
    args = p.parse_args(argv)
    from rules import RULES, render_docs

    code = args.code.strip().upper()
    by_name = {info.name: c for c, info in RULES.items()}
    code = by_name.get(args.code.strip(), code)
    if code not in RULES:
        print(f"thunder-lint: error: unknown rule {args.code!r}; `thunder-lint rules` lists them", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(render_docs(code).rstrip("\n") + "\n")
    return EXIT_CLEAN


def cmd_rules(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="thunder-lint rules", description="List every rule.")
    p.add_argument("--format", choices=("text", "json"), default="text")
    args = p.parse_args(argv)
    from rules import RULES

    if args.format == "json":
        import json

        rows = [
            {"code": c, "name": i.name, "severity": i.severity, "summary": i.summary, "fixable": i.fixable}
            for c, i in RULES.items()
        ]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return EXIT_CLEAN
    name_w = max([len(i.name) for i in RULES.values()] + [4])
    lines = [f"{'code':<6}  {'name':<{name_w}}  fix  summary"]
    for code, info in RULES.items():
        lines.append(f"{code:<6}  {info.name:<{name_w}}  {'yes' if info.fixable else '   '}  {info.summary}")
    sys.stdout.write("\n".join(lines) + "\n")
    return EXIT_CLEAN


def cmd_serve(argv: list[str]) -> int:
    # The service sits above the analyzer (server -> analyzer): it registers its command as a plugin of this CLI
    # (pyproject.toml, entry point group "thunder_lint.subcommands"), so the analyzer never imports it.
    from importlib.metadata import entry_points

    found = [ep for ep in entry_points(group="thunder_lint.subcommands") if ep.name == "serve"]
    try:
        if not found:
            raise ImportError("no `serve` entry point in the group thunder_lint.subcommands: install the package")
        serve_main = found[0].load()
    except ImportError as e:
        print(f"thunder-lint: error: the HTTP service is not available in this installation ({e}): "
              "pip install 'thunder-lint[server]'", file=sys.stderr)
        return EXIT_ERROR
    return int(serve_main(argv) or 0)


# --- the lint run ------------------------------------------------------------------------------------
def cmd_check(argv: list[str]) -> int:
    parser = build_parser()
    args = parser.parse_intermixed_args(argv)  # paths may come before, between or after options
    stdin_mode = args.stdin_filename is not None or args.paths == ["-"]
    if stdin_mode and args.paths not in ([], ["-"]):
        parser.error("--stdin-filename reads one source from stdin: give no other paths (or `-`)")
    if "-" in args.paths and not stdin_mode:
        parser.error("`-` (stdin) cannot be mixed with other paths")
    paths = args.paths or ["."]
    if args.fix_only:
        args.fix = True

    config_paths = [args.stdin_filename] if stdin_mode and args.stdin_filename else ([] if stdin_mode else paths)
    cfg = effective_config(args, config_paths or [os.getcwd()])
    validate_selection(cfg)
    # ruff's order: the command line, then the environment, then the config, then the default
    args.format = args.format or _env_format() or cfg.output_format or "full"
    if args.unsafe_fixes is None:
        args.unsafe_fixes = bool(cfg.unsafe_fixes)
    fix_mode = ("unsafe" if args.unsafe_fixes else "safe") if (args.fix or args.diff) else None

    from .runner import Settings

    settings = Settings.from_config(cfg, fix=fix_mode, max_file_bytes=args.max_file_size)
    if args.show_settings:
        return _show_settings(args, cfg, settings)
    if stdin_mode:
        return _check_stdin(args, settings)
    if args.show_files:
        return _show_files(args, paths, cfg)
    if args.add_noqa:
        return _add_noqa(args, paths, cfg, dataclasses.replace(settings, fix=None))
    if args.watch:
        return _watch(args, paths, cfg, settings)
    return _check_paths(args, paths, cfg, settings)


def _env_format() -> str | None:
    value = os.environ.get("THUNDER_LINT_OUTPUT_FORMAT", "").strip()
    if not value:
        return None
    if value not in FORMATS:
        raise UsageError(f"THUNDER_LINT_OUTPUT_FORMAT={value!r} is not a format: {', '.join(FORMATS)}")
    return value


def _show_settings(args, cfg, settings) -> int:
    """What the run would use, one `key = value` a line (ruff's --show-settings), the config file first."""
    lines = [f"config file: {cfg.source or '(none: defaults)'}", f"project root: {cfg.root}",
             f"cache dir: {_cache_dir(args, cfg)}", f"output-format = {args.format!r}",
             f"unsafe-fixes = {str(bool(args.unsafe_fixes)).lower()}"]
    rules = cfg.file_rules()  # (exclude and include with their defaults filled in)
    for field in dataclasses.fields(cfg):
        if field.name in ("root", "source", "output_format", "unsafe_fixes", "cache_dir"):
            continue
        value = getattr(rules, field.name) if field.name in ("exclude", "include") else getattr(cfg, field.name)
        lines.append(f"{field.name.replace('_', '-')} = {value!r}")
    from .selection import resolve
    from rules import RULES

    enabled = sorted(resolve(RULES, cfg.select, cfg.ignore, cfg.extend_select))
    lines.append(f"enabled rules = {enabled!r}")
    _emit(args, "\n".join(lines) + "\n")
    return EXIT_CLEAN


def _discover(args, paths, cfg):
    from .discovery import discover

    return discover(paths, root=cfg.root, force_exclude=args.force_exclude, rules=cfg.file_rules())


def _show_files(args, paths, cfg) -> int:
    found = _discover(args, paths, cfg)
    for p, why in found.problems:
        print(f"thunder-lint: warning: {p}: {why}", file=sys.stderr)
    _emit(args, "".join(f"{os.path.abspath(p)}\n" for p in sorted(found.files)))
    return EXIT_CLEAN


def _cache_dir(args, cfg) -> str:
    from .cache import CACHE_DIR_NAME

    return (args.cache_dir or os.environ.get("THUNDER_LINT_CACHE_DIR") or cfg.cache_dir
            or os.path.join(_top(args, cfg), CACHE_DIR_NAME))


def _top(args, cfg) -> str:
    """The project's top folder: the config file's, else the one _project_root finds above the linted paths."""
    return cfg.root if cfg.source else _project_root(args.paths or ["."])


def _project_root(paths: list[str]) -> str:
    """Without a config file: the nearest folder at or above the linted paths holding a pyproject.toml,
    setup.py, setup.cfg or .git (where ruff puts its cache), else the current folder."""
    existing = [os.path.abspath(p) for p in paths if os.path.exists(p)]
    try:
        start = os.path.commonpath(existing) if existing else os.getcwd()
    except ValueError:
        start = os.getcwd()
    if not os.path.isdir(start):
        start = os.path.dirname(start)
    folder = start
    while True:
        if any(os.path.exists(os.path.join(folder, m)) for m in ("pyproject.toml", "setup.py", "setup.cfg", ".git")):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            return os.getcwd()
        folder = parent


def _add_noqa(args, paths, cfg, settings) -> int:
    """`--add-noqa`: a `# noqa: CODE` on each line with a finding; what was added is said on stderr."""
    from .file_reader import Unreadable, read_with_stat
    from .notebook import NotANotebook, source_of
    from .runner import run
    from .static.noqa import add_noqa

    found = _discover(args, paths, cfg)
    result = run(found.files, settings, jobs=args.jobs, cache=None)
    by_path: dict[str, list] = {}
    for d in result.diagnostics:
        by_path.setdefault(d.path, []).append(d)
    added = 0
    for path, findings in sorted(by_path.items()):
        try:
            data, _ = read_with_stat(path, settings.max_file_bytes)
            text, notebook = source_of(path, data)
        except Unreadable:
            continue
        if notebook is not None:  # a notebook: the comments go into its cells' lines, the JSON is rewritten
            findings = [notebook.cell_map.unplace(d) for d in findings]
        new, n = add_noqa(text, findings)
        if n and notebook is not None:
            try:
                new = notebook.with_source(new)
            except NotANotebook as e:
                print(f"thunder-lint: warning: {path}: no noqa added: {e}", file=sys.stderr)
                continue
        if n:
            from .cache import content_hash

            problem = _write_fixed(path, content_hash(data), new)
            if problem:
                print(f"thunder-lint: warning: {problem}", file=sys.stderr)
                continue
            added += n
    print(f"Added {plural(added, 'noqa directive')}.", file=sys.stderr)
    return EXIT_ERROR if result.errors else EXIT_CLEAN


def _watch(args, paths, cfg, settings) -> int:
    """`--watch`: lint, then lint again whenever a linted file (or a new one) changes; Ctrl-C stops."""
    import time

    from .file_pass import keep_linted_trees

    keep_linted_trees(False)  # many lints in one process: each one's trees are freed

    def snapshot():
        found = _discover(args, paths, cfg)
        state = {}
        for p in found.files:
            try:
                st = os.stat(p)
                state[p] = (st.st_mtime_ns, st.st_size)
            except OSError:
                pass
        return state

    seen = None
    while True:
        now = snapshot()
        if now != seen:
            if seen is not None:
                print(f"\n[{time.strftime('%H:%M:%S')}] File change detected...", file=sys.stderr)
            _check_paths(args, paths, cfg, settings)
            sys.stdout.flush()
            seen = snapshot()
        time.sleep(float(os.environ.get("THUNDER_LINT_WATCH_INTERVAL", "0.5")))


def _emit(args: argparse.Namespace, text: str) -> None:
    # A file name that is not valid UTF-8 reaches us with surrogate escapes: print its own bytes back.
    if args.output_file:
        try:
            with open(args.output_file, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(text)
        except OSError as e:
            raise UsageError(f"cannot write the report to {args.output_file}: {e.strerror or e}") from None
    else:
        if getattr(args, "format", None) in ("full", "concise"):
            from .report.colour import colourize, wanted

            if wanted(sys.stdout):
                text = colourize(text)
        try:
            sys.stdout.write(text)
        except UnicodeEncodeError:
            sys.stdout.flush()
            sys.stdout.buffer.write(text.encode("utf-8", "surrogateescape"))


MAX_UNRESOLVED_NOTES = 10


def unresolved_notes(report: dict | None, library_default: str) -> list[str]:
    """One line per compile call the index could not follow, where the library default did not apply (its own
    note names them then): the code it compiles is linted as not compiled, and the user should know."""
    if not report:
        return []
    unmatched = [f"warning: the `assume-compiled` pattern `{p}` matches no function of the linted files"
                 for p in report.get("unmatched", ())]
    if library_default:
        return unmatched
    sites = sorted(tuple(u) for u in report.get("unresolved", ()))
    lines = [f"note: compile call at {p}:{line} (`{label}`) not resolved: the code it compiles is linted as not "
             "compiled (name it with `assume-compiled`)" for p, line, label in sites[:MAX_UNRESOLVED_NOTES]]
    if len(sites) > MAX_UNRESOLVED_NOTES:
        lines.append(f"note: ... and {len(sites) - MAX_UNRESOLVED_NOTES} more compile calls not resolved")
    return unmatched + lines


def _report(args, diagnostics, sources, *, fixed: int | None, extra_head: str = "", library_default: str = "",
            report: dict | None = None) -> None:
    """Render the findings (or the statistics) and, for the human formats, the summary lines."""
    human = args.format in ("full", "concise")
    if args.statistics and args.format in ("json", "json-lines"):
        from .report.statistics import render_statistics_json

        body = render_statistics_json(diagnostics)
    elif args.statistics:
        body = render_statistics(diagnostics)
    else:
        body = render(
            diagnostics,
            args.format,
            root=os.getcwd(),
            show_fixes=args.show_fixes,
            sources=sources_for(diagnostics, sources) if args.format == "full" else None,
        )
    if human and not args.quiet:
        lines = summary_lines(diagnostics, fixed=fixed, unsafe_fixes=args.unsafe_fixes)
        if library_default:
            lines.append(LIBRARY_DEFAULT_NOTE.format(library_default))
        lines += unresolved_notes(report, library_default)
        body = body + ("\n" if body and args.format == "full" else "") + "\n".join(lines) + "\n"
    elif not args.quiet:
        # The machine formats keep stdout to the format itself; what was assumed goes to stderr, as a note.
        if library_default:
            print(f"thunder-lint: note: {LIBRARY_DEFAULT_NOTE.format(library_default)}", file=sys.stderr)
        for line in unresolved_notes(report, library_default):
            print(f"thunder-lint: {line}", file=sys.stderr)
    _emit(args, extra_head + body)


def _exit_code(args, n_findings: int, errors: list[str]) -> int:
    if errors:
        return EXIT_ERROR
    return EXIT_CLEAN if (n_findings == 0 or args.exit_zero) else EXIT_FINDINGS


def _check_stdin(args: argparse.Namespace, settings) -> int:
    from .file_reader import Unreadable, unreadable_diagnostic
    from .notebook import NotANotebook, source_of
    from .runner import lint_text
    from . import static

    name = args.stdin_filename or STDIN_DEFAULT_NAME
    if sys.stdin is None:  # started with stdin closed (``<&-``): Python gives us no stream at all
        raise UsageError("cannot read source from stdin: stdin is closed")
    try:
        data = sys.stdin.buffer.read()
    except (OSError, ValueError) as e:
        raise UsageError(f"cannot read source from stdin: {getattr(e, 'strerror', None) or e}") from None
    fixing_to_stdout = settings.fix is not None and not args.diff
    try:
        from .file_reader import MAX_FILE_BYTES, too_large

        limit = settings.max_file_bytes or MAX_FILE_BYTES
        if len(data) > limit:
            raise Unreadable(too_large(len(data), limit))
        text, notebook = source_of(name, data)  # --stdin-filename x.ipynb: the notebook's JSON, as ruff reads it
    except Unreadable as e:
        diagnostics = [unreadable_diagnostic(name, e)]
        if fixing_to_stdout:
            # An editor replaces its buffer with our stdout: give the input back untouched.
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stderr.write(render(diagnostics, "concise"))
        else:
            _report(args, diagnostics, {}, fixed=None)
        return _exit_code(args, 1, [])
    if settings.fix is None:
        from .project.index import project_file

        project = project_file(name, settings)
        diagnostics = lint_text(text, name, settings, project)
        sources = {name: text}
        if notebook is not None:
            diagnostics = notebook.cell_map.place_all(diagnostics)
            sources = {(name, n): src for n, src in notebook.cell_sources().items()}
        _report(args, diagnostics, sources, fixed=None, library_default=project.library_default)
        return _exit_code(args, len(diagnostics), [])
    try:
        outcome = static.fix_source(
            text, name, select=settings.select, ignore=settings.ignore_for(name), extend_select=settings.extend_select,
            jit_decorators=settings.jit_decorators, unsafe=settings.fix == "unsafe",
        )
    except Exception as e:
        if fixing_to_stdout:
            sys.stdout.write(text if notebook is None else notebook.text)  # never lose the user's source
        print(f"thunder-lint: error: {name}: internal error while fixing: {type(e).__name__}: {e}", file=sys.stderr)
        return EXIT_ERROR
    before, after, remaining = text, outcome.text, list(outcome.remaining)
    if notebook is not None:  # the notebook's JSON in, the notebook's JSON out
        remaining = notebook.cell_map.place_all(remaining)
        try:
            before, after = notebook.text, notebook.with_source(outcome.text)
        except NotANotebook as e:
            print(f"thunder-lint: warning: {name}: not fixed: {e}", file=sys.stderr)
            before = after = notebook.text
            remaining = notebook.cell_map.place_all(list(outcome.remaining) + list(outcome.applied))
    if args.diff:
        diff = _unified_diff(name, before, after)
        _emit(args, diff)
        return EXIT_FINDINGS if diff and not args.exit_zero else EXIT_CLEAN
    # --fix on stdin: the fixed source goes to stdout (as in ruff), the remaining findings to stderr.
    sys.stdout.write(after)
    if remaining:
        sys.stderr.write(render(remaining, "concise"))
    return _exit_code(args, len(remaining), [])


def _check_paths(args: argparse.Namespace, paths: list[str], cfg, settings) -> int:
    from .cache import ResultCache, settings_key
    from .discovery import discover
    from .file_reader import unreadable_diagnostic
    from .progress import ProgressBar
    from .runner import run

    found = _discover(args, paths, cfg)
    if not found.files and not found.problems:
        print("thunder-lint: warning: No Python files found under the given path(s)", file=sys.stderr)
    named = None  # --index-whole-project: the files to report (the others only feed the project index)
    files = found.files
    if args.index_whole_project and found.files:
        named = {os.path.abspath(p) for p in found.files}
        rest = discover([os.path.relpath(_top(args, cfg))], root=cfg.root, rules=cfg.file_rules()).files
        files = found.files + [p for p in rest if os.path.abspath(p) not in named]
    progress = ProgressBar(sys.stderr) if not args.quiet else None
    results = []
    try:
        # Each file takes the config nearest to it, as ruff resolves settings per file (a monorepo's packages
        # each with their own): files under one config are linted together, as one project.
        for group_cfg, group_settings, group in _config_groups(args, cfg, settings, files):
            cache = None
            if not args.no_cache:
                # (fix mode lints as a plain run first, so it shares the plain run's cache)
                key = settings_key(__version__, dataclasses.replace(group_settings, fix=None))
                cache = ResultCache(_cache_dir(args, group_cfg), key).load()
            results.append(run(group, group_settings, jobs=args.jobs, cache=cache, progress=progress))
            if cache is not None:
                warning = cache.save()
                if warning:
                    print(f"thunder-lint: warning: {warning}", file=sys.stderr)
    finally:
        if progress:
            progress.close()
    result = _merged_results(results)
    if named is not None:  # the rest of the project was read for the index only: neither reported nor fixed
        result.files = [r for r in result.files if os.path.abspath(r.path) in named]
        result.diagnostics = [d for d in result.diagnostics if os.path.abspath(d.path) in named]
        result.errors = [e for e in result.errors if any(e.startswith(r.path + ":") for r in result.files)
                         or not any(e.startswith(p + ":") for p in files)]
    diagnostics = list(result.diagnostics) + [unreadable_diagnostic(p, why) for p, why in found.problems]
    diagnostics.sort(key=Diagnostic.sort_key)
    errors = list(result.errors)
    for e in errors:
        print(f"thunder-lint: error: {e}", file=sys.stderr)

    if args.diff:
        diffs = [_unified_diff(r.path, r.original, r.fixed) for r in result.files if r.fixed is not None]
        _emit(args, "".join(diffs))
        if not args.quiet and not args.output_file:
            n = sum(len(r.applied) for r in result.files)
            if diffs:
                print(f"Would fix {plural(n, 'error')} in {plural(len(diffs), 'file')}.", file=sys.stderr)
            else:
                print("No fixes to apply.", file=sys.stderr)
        if errors:
            return EXIT_ERROR
        return EXIT_FINDINGS if diffs and not args.exit_zero else EXIT_CLEAN

    fixed = None
    head = ""
    if args.fix:
        fixed = 0
        fixed_lines = []
        for r in result.files:
            if r.fixed is None:
                continue
            problem = _write_fixed(r.path, r.digest, r.fixed)
            if problem:
                print(f"thunder-lint: warning: {problem}", file=sys.stderr)
                diagnostics.extend(r.applied)  # not written, so still there
                diagnostics.sort(key=Diagnostic.sort_key)
                continue
            fixed += len(r.applied)
            if args.show_fixes:
                fixed_lines.append(f"{r.path}:")
                for d in r.applied:
                    fixed_lines.append(f"    {d.line}:{d.column} {d.code} ({d.name})")
        if fixed_lines and args.format in ("full", "concise"):
            head = "Fixed:\n" + "\n".join(fixed_lines) + "\n\n"
    if args.fix_only:  # ruff's --fix-only: what was fixed, nothing of what remains
        if not args.quiet:
            print(f"Fixed {plural(fixed or 0, 'finding')}." if fixed else "No fixes to apply.", file=sys.stderr)
        if errors:
            return EXIT_ERROR
        return EXIT_FINDINGS if (fixed and args.exit_non_zero_on_fix) else EXIT_CLEAN
    _report(args, diagnostics, {}, fixed=fixed, extra_head=head, library_default=result.library_default,
            report=result.report)
    if fixed and args.exit_non_zero_on_fix and not errors:
        return EXIT_FINDINGS
    return _exit_code(args, len(diagnostics), errors)


def _config_groups(args, cfg, settings, files: list[str]):
    """(config, settings, files) per config file that the files resolve to; one group when --config names a file
    or every file resolves to the same config."""
    from .cli_common import config_file_given
    from .runner import Settings

    if config_file_given(args) or not files:
        return [(cfg, settings, files)]
    by_folder: dict[str, str | None] = {}  # (shared by the lookups: each folder above the files is looked in once)
    groups: dict[str | None, list[str]] = {}
    for f in files:
        folder = os.path.dirname(os.path.abspath(f))
        if folder not in by_folder:
            config_mod.find_config(folder, by_folder)
        groups.setdefault(by_folder[folder], []).append(f)
    if list(groups) in ([cfg.source], [None]) and (cfg.source is not None or len(groups) == 1):
        return [(cfg, settings, files)]
    out = []
    for source, group in sorted(groups.items(), key=lambda kv: kv[0] or ""):
        group_cfg = cfg if source == cfg.source else effective_config(args, group, found=source)
        out.append((group_cfg, Settings.from_config(group_cfg, fix=settings.fix, max_file_bytes=settings.max_file_bytes), group))
    return out


def _merged_results(results: list):
    from .runner import RunResult

    if len(results) == 1:
        return results[0]
    notes = sorted({r.library_default for r in results if r.library_default})
    return RunResult(
        sorted((d for r in results for d in r.diagnostics), key=Diagnostic.sort_key),
        sorted((f for r in results for f in r.files), key=lambda f: f.path),
        [e for r in results for e in r.errors],
        cache_hits=sum(r.cache_hits for r in results),
        elapsed=sum(r.elapsed for r in results),
        library_default="; ".join(notes),
        report={k: [x for r in results for x in r.report.get(k, ())] for k in ("unresolved", "pipelines", "unmatched")},
    )


def _tolerant_streams() -> None:
    # A path or message the terminal's encoding cannot show must not turn into a crash.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):
            pass


def _torch_installed() -> bool:
    # torch is the `torch` extra: the static linter runs without it, `run` cannot.
    try:
        import torch  # noqa: F401
    except ModuleNotFoundError as e:
        if e.name == "torch":
            return False
        raise
    return True


_LINTED = False  # main ran the lint (``entry`` may skip the interpreter's teardown)


def main(argv: Sequence[str] | None = None, *, exits_after: bool = False) -> int:
    """The command line; ``exits_after``: the caller ends the process with ``os._exit`` after a lint (``entry``),
    so a lint may keep what it parsed until then (never freed: the memory goes with the process)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    _tolerant_streams()
    try:
        if argv and argv[0] == "rule":
            return cmd_rule(argv[1:])
        if argv and argv[0] == "rules":
            return cmd_rules(argv[1:])
        if argv and argv[0] == "serve":
            return cmd_serve(argv[1:])
        if argv and argv[0] == "lsp":
            from .lsp import main as lsp_main  # imported here only: it needs the `lsp` extra (pygls)

            return lsp_main(argv[1:])
        if argv and argv[0] == "run":
            if not _torch_installed():
                print("thunder-lint: error: `thunder-lint run` needs PyTorch, which is not installed here: "
                      "pip install 'thunder-lint[torch]'", file=sys.stderr)
                return EXIT_ERROR
            from .run.command import cmd_run  # imported here only: it loads torch and the compiler

            return cmd_run(argv[1:])
        if argv and argv[0] == "check":  # ruff's spelling works too
            argv = argv[1:]
        global _LINTED
        _LINTED = True
        if exits_after:
            from .file_pass import keep_linted_trees

            keep_linted_trees()
        return cmd_check(argv)
    except SystemExit as e:  # argparse: --help/--version (0) or a usage error (2)
        return e.code if isinstance(e.code, int) else (EXIT_CLEAN if e.code is None else EXIT_ERROR)
    except (config_mod.ConfigError, UsageError) as e:
        print(f"thunder-lint: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except ValueError as e:
        from .selection import SelectionError

        if isinstance(e, SelectionError):
            print(f"thunder-lint: error: {e}", file=sys.stderr)
            return EXIT_ERROR
        return _internal_error(e)
    except KeyboardInterrupt:
        print("thunder-lint: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`thunder-lint . | head`): stop quietly.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return EXIT_FINDINGS
    except Exception as e:
        return _internal_error(e)


def _internal_error(e: BaseException) -> int:
    import traceback

    print(f"thunder-lint: internal error: {type(e).__name__}: {e}", file=sys.stderr)
    if os.environ.get("THUNDER_LINT_DEBUG"):
        traceback.print_exc()
    else:
        print("(set THUNDER_LINT_DEBUG=1 for the traceback)", file=sys.stderr)
    return EXIT_ERROR


def entry() -> None:
    """The console script: ``main``, then, after a lint, out without the interpreter's teardown. Freeing every
    module, rule table and tree object one by one costs ~15 ms CPU, 7% of linting a 16-file project; a lint
    leaves nothing to finish (the cache is written, helpers and pools are stopped), so its streams are flushed
    and the process exits at once (as mypy does). Other subcommands (`run` executes user code) exit normally."""
    code = main(exits_after=True)
    if _LINTED:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # a closed pipe: what the normal exit would have met too
            pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
