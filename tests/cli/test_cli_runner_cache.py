"""The runner (serial and process pool), the results cache, the Python API and the progress bar."""

from __future__ import annotations

import io
import json
import os
import threading

import pytest

import analyzer
from analyzer import file_pass, runner
from analyzer import static
from analyzer.cache import ResultCache, settings_key
from analyzer.progress import ProgressBar
from analyzer.runner import Settings, run
from cli_helpers import CLEAN_SRC, SYNTAX_ERROR_SRC, TL101_SRC, write


def make_tree(root, n=40):
    paths = []
    for i in range(n):
        src = (TL101_SRC, CLEAN_SRC, SYNTAX_ERROR_SRC)[i % 3]
        paths.append(str(write(root / f"pkg{i % 4}" / f"m{i:03}.py", src)))
    return paths


def as_json(diagnostics):
    return [d.to_json() for d in diagnostics]


def several_processes(monkeypatch, how: str) -> None:
    """Make a run with jobs > 1 use forked helpers that hold their files ("helpers", however small the project),
    helpers that keep no parsed tree and parse each file again to lint it ("reparsed"), or a pool that lints files
    as read ("pool": a big project where forking is unsafe)."""
    # helpers, and pool workers that see this test's monkeypatching, are forked only from a single-threaded process:
    # with a thread left alive by an earlier test the run would spawn and the test check something else
    assert threading.active_count() == 1, f"threads left alive by earlier tests: {threading.enumerate()}"
    if how in ("helpers", "reparsed"):
        monkeypatch.setattr(runner, "SPLIT_BYTES", 0)
        if how == "reparsed":
            monkeypatch.setattr(runner, "HOLD_LIMIT_BYTES", 0)
    else:
        monkeypatch.setattr(runner, "HOLD_BYTES", 0)
        monkeypatch.setattr(runner, "can_fork", lambda: False)


@pytest.mark.parametrize("how", ["helpers", "reparsed", "pool"])
def test_several_processes_and_one_give_identical_results(tmp_path, monkeypatch, how):
    monkeypatch.chdir(tmp_path)
    paths = [os.path.relpath(p) for p in make_tree(tmp_path)]
    serial = run(paths, Settings(), jobs=1)
    several_processes(monkeypatch, how)
    pooled = run(paths, Settings(), jobs=2)
    assert not serial.errors and not pooled.errors
    assert as_json(pooled.diagnostics) == as_json(serial.diagnostics)
    assert len([d for d in serial.diagnostics if d.code == "TL101"]) == 14
    assert len([d for d in serial.diagnostics if d.code == "TL001"]) == 13


def counting_engine(monkeypatch, what=("lint_source", "prepare_source")):
    """The paths the engine starts linting: whole (lint_source) or in two halves (prepare_source, a held file);
    with ``what=RULES_RUN``, the paths the rules run on (lint_source, or check_prepared on a held file)."""
    calls = []
    for name in what:
        def counted(first, *args, real=getattr(static, name), name=name, **kw):
            calls.append(first.source.path if name == "check_prepared" else (args[0] if args else kw.get("path")))
            return real(first, *args, **kw)

        monkeypatch.setattr(static, name, counted)
    return calls


RULES_RUN = ("lint_source", "check_prepared")


def _project(tmp_path, monkeypatch, n: int) -> list[str]:
    """`n` generated files and a package whose ops.scale is compiled only through net.py's forward, reached from
    train.py (a fact of the project index); the paths, relative to tmp_path (the working directory)."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "ops.py", "def scale(x):\n    return x * x.sum().item()\n")
    write(tmp_path / "pkg" / "net.py", "import torch\nfrom .ops import scale\n\nclass Net(torch.nn.Module):\n"
          "    def forward(self, x):\n        return scale(x)\n")
    write(tmp_path / "train.py", "import torch\nfrom pkg.net import Net\nmodel = torch.compile(Net())\n")
    return [os.path.relpath(p) for p in make_tree(tmp_path, n=n)] + ["pkg/__init__.py", "pkg/ops.py", "pkg/net.py", "train.py"]


@pytest.mark.parametrize("budget", [runner.HOLD_LIMIT_BYTES, 0], ids=["held", "reparsed"])
def test_one_process_lints_each_file_once_held_or_reparsed(tmp_path, monkeypatch, budget):
    """Summarized first, then linted once with the project index's facts: kept parsed, or (past the memory budget)
    parsed again; the same findings, never a file linted twice."""
    paths = _project(tmp_path, monkeypatch, n=6)
    monkeypatch.setattr(runner, "HOLD_LIMIT_BYTES", budget)
    monkeypatch.setattr(runner, "HOLD_BYTES", 0)  # a "big" project: in one process it is linted once all the same
    calls = counting_engine(monkeypatch, RULES_RUN)
    result = run(paths, Settings(), jobs=1)
    assert not result.errors
    # ops.scale is compiled only through net.py's forward (reached from train.py): a fact of the project index
    assert [(d.path, d.code) for d in result.diagnostics if d.path.startswith("pkg/")] == [("pkg/ops.py", "TL302")]
    # every file that parses is linted once (the syntax errors' finding is the parse's)
    assert sorted(calls) == sorted(p for p in paths if SYNTAX_ERROR_SRC not in open(p).read())
    monkeypatch.setattr(runner, "HOLD_LIMIT_BYTES", runner.HOLD_LIMIT_BYTES if budget == 0 else 0)
    assert as_json(run(paths, Settings(), jobs=1).diagnostics) == as_json(result.diagnostics)


def test_a_pool_lints_as_read_and_again_where_the_index_changes_the_facts(tmp_path, monkeypatch):
    """Where forking is unsafe a big project goes to a pool: linted as read, and again where the facts change,
    with the findings of a run that lints each file once."""
    paths = _project(tmp_path, monkeypatch, n=30)
    once = run(paths, Settings(), jobs=1)
    several_processes(monkeypatch, "pool")
    pooled = run(paths, Settings(), jobs=2)
    assert not pooled.errors and as_json(pooled.diagnostics) == as_json(once.diagnostics)
    assert [(d.path, d.code) for d in pooled.diagnostics if d.path.startswith("pkg/")] == [("pkg/ops.py", "TL302")]


def test_cache_answers_unchanged_files_and_relints_changed_ones(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = [os.path.relpath(p) for p in make_tree(tmp_path, n=12)]
    settings = Settings()
    key = settings_key("test", settings)
    cold_cache = ResultCache(tmp_path / "cache", key).load()
    cold = run(paths, settings, jobs=1, cache=cold_cache)
    assert cold.cache_hits == 0
    assert cold_cache.save() is None and cold_cache.file.exists()

    calls = counting_engine(monkeypatch)
    warm = run(paths, settings, jobs=1, cache=ResultCache(tmp_path / "cache", key).load())
    assert warm.cache_hits == 12 and calls == []
    assert as_json(warm.diagnostics) == as_json(cold.diagnostics)

    # Same size, same mtime granularity is irrelevant: the content hash decides.
    write(tmp_path / paths[1], TL101_SRC)  # was clean, now has a finding
    calls.clear()
    changed = run(paths, settings, jobs=1, cache=ResultCache(tmp_path / "cache", key).load())
    assert calls == [paths[1]] and changed.cache_hits == 11
    assert any(d.path == paths[1] and d.code == "TL101" for d in changed.diagnostics)


def test_cache_key_changes_with_settings_and_version():
    base = settings_key("1", Settings())
    assert settings_key("1", Settings()) == base
    assert settings_key("2", Settings()) != base
    assert settings_key("1", Settings(ignore=("TL101",))) != base
    assert settings_key("1", Settings(jit_decorators=("my_jit",))) != base
    assert settings_key("1", Settings(per_file_ignores=(("a.py", ("TL1",)),))) != base


def test_damaged_cache_file_is_ignored(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = [os.path.relpath(p) for p in make_tree(tmp_path, n=6)]
    key = settings_key("test", Settings())
    cache = ResultCache(tmp_path / "cache", key)
    cache.directory.mkdir()
    cache.file.write_bytes(b"\x80\x05not a pickle at all")
    result = run(paths, Settings(), jobs=1, cache=cache.load())
    assert result.cache_hits == 0 and len(result.diagnostics) == 4
    assert cache.save() is None
    assert ResultCache(tmp_path / "cache", key).load().entries.keys() == {os.path.abspath(p) for p in paths}


def test_cli_warm_run_uses_the_cache_and_no_cache_writes_nothing(cli, tmp_path, monkeypatch):
    make_tree(tmp_path, n=9)
    first = cli(".", "--format", "json", "-j", "1")
    cache_dir = tmp_path / ".cache-under-test"
    assert list(cache_dir.glob("results-*.pickle"))
    assert (cache_dir / ".gitignore").read_text().strip().endswith("*")
    calls = counting_engine(monkeypatch)
    second = cli(".", "--format", "json", "-j", "1")
    assert second.out == first.out and calls == []
    for f in cache_dir.iterdir():
        f.unlink()
    third = cli(".", "--format", "json", "-j", "1", "--no-cache")
    assert third.out == first.out and len(calls) == 9
    assert not list(cache_dir.iterdir())


def test_a_dying_worker_does_not_lose_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = [os.path.relpath(p) for p in make_tree(tmp_path, n=30)]
    several_processes(monkeypatch, "pool")
    parent = os.getpid()
    real = file_pass.process_file

    def fragile(path, *args, **kw):
        if os.getpid() != parent and path.endswith("m007.py"):
            os._exit(3)  # a crash in a worker (as if killed or out of memory)
        return real(path, *args, **kw)

    monkeypatch.setattr(file_pass, "process_file", fragile)
    result = run(paths, Settings(), jobs=2)
    monkeypatch.setattr(file_pass, "process_file", real)
    expected = run(paths, Settings(), jobs=1)
    assert any("worker process died" in e for e in result.errors)
    # The file that kills its worker is named; every other file is linted, none twice.
    culprit = next(p for p in paths if p.endswith("m007.py"))
    assert f"{culprit}: internal error: the worker process died while linting this file" in result.errors
    assert sorted(r.path for r in result.files) == sorted(paths)
    assert as_json(result.diagnostics) == as_json([d for d in expected.diagnostics if d.path != culprit])


@pytest.mark.parametrize("when", ["reading", "linting"])
def test_a_dying_helper_loses_no_file(tmp_path, monkeypatch, when):
    """A helper killed while it reads its share, or while it lints it with the index's facts: its files are linted
    one at a time in workers of their own, with the same findings."""
    monkeypatch.chdir(tmp_path)
    paths = [os.path.relpath(p) for p in make_tree(tmp_path, n=30)]
    expected = run(paths, Settings(), jobs=1)
    several_processes(monkeypatch, "helpers")
    culprit = runner._chunks(paths, 2)[1][0]  # the first file of the helper's share
    parent = os.getpid()
    name = "process_file" if when == "reading" else "lint_held"
    real = getattr(file_pass, name)

    def fragile(*args, **kw):
        path = args[0] if name == "process_file" else args[0].path
        if os.getpid() != parent and path == culprit and (name == "lint_held" or kw.get("hold")):
            os._exit(3)  # as if killed or out of memory
        return real(*args, **kw)

    monkeypatch.setattr(file_pass, name, fragile)
    result = run(paths, Settings(), jobs=2)
    assert [e for e in result.errors if "helper process died" in e], result.errors
    assert sorted(r.path for r in result.files) == sorted(paths)
    assert as_json(result.diagnostics) == as_json(expected.diagnostics)


@pytest.mark.parametrize("where", ["lint_source", "prepare_source", "check_prepared"])
def test_engine_exception_is_reported_per_file_and_the_run_goes_on(cli, tmp_path, monkeypatch, where):
    write(tmp_path / "a.py", TL101_SRC)
    write(tmp_path / "b.py", TL101_SRC)
    real = getattr(static, where)

    def flaky(first, *args, **kw):
        path = first.source.path if where == "check_prepared" else args[0]
        if path.endswith("a.py"):
            raise RuntimeError("boom")
        return real(first, *args, **kw)

    monkeypatch.setattr(static, where, flaky)
    if where == "lint_source":  # the engine whole: files summarized, not kept parsed, then parsed again to lint
        monkeypatch.setattr(runner, "HOLD_LIMIT_BYTES", 0)
    r = cli(".", "--format", "json", "-j", "1", "--no-cache")
    assert r.code == 2
    assert "a.py: internal error while linting: RuntimeError: boom" in r.err
    assert [d["path"] for d in json.loads(r.out)] == ["b.py"]


def test_python_api(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    make_tree(tmp_path, n=6)
    write(tmp_path / "pyproject.toml", '[tool.thunder-lint]\nignore = ["TL001"]\n')  # TL001 stays on anyway
    found = analyzer.lint_paths(".", cache=False)
    assert sorted({d.code for d in found}) == ["TL001", "TL101"]
    assert analyzer.lint_paths(["."], select=["TL2"], cache=False) == [d for d in found if d.code == "TL001"]
    assert analyzer.lint_paths(".", ignore=["TL101"], jobs=1) == [d for d in found if d.code != "TL101"]
    assert {d.code for d in analyzer.lint_paths(".", config={"ignore": ["TL1"]}, cache=False)} == {"TL001"}
    assert [d.code for d in analyzer.lint_paths("missing.py", cache=False)] == ["TL002"]
    assert analyzer.lint_source(TL101_SRC)[0].code == "TL101"
    assert analyzer.fix_source(TL101_SRC) == TL101_SRC  # TL101's fixes are unsafe
    assert analyzer.fix_source(TL101_SRC, unsafe_fixes=True) == TL101_SRC.replace("x.reshape(-1)", "x.view(-1)")
    for name in ("Diagnostic", "Fix", "Edit", "Severity"):
        assert hasattr(analyzer, name)


class FakeTTY(io.StringIO):
    def isatty(self):
        return True


def test_progress_bar_only_on_a_terminal_and_only_when_slow():
    tty = FakeTTY()
    bar = ProgressBar(tty, show_after=0.0)
    for i in range(1, 11):
        bar(i, 10)
    assert "10/10 files" in tty.getvalue() and "[####" in tty.getvalue()
    bar.close()
    assert tty.getvalue().endswith("\r")
    quick = FakeTTY()
    ProgressBar(quick, show_after=60.0)(5, 10)
    assert quick.getvalue() == ""
    pipe = io.StringIO()
    ProgressBar(pipe, show_after=0.0)(5, 10)
    assert pipe.getvalue() == ""


def test_version_matches_pyproject():
    import tomllib

    from analyzer.version import __version__

    with open(os.path.join(os.path.dirname(os.path.dirname(analyzer.__file__)), "pyproject.toml"), "rb") as f:
        assert tomllib.load(f)["project"]["version"] == __version__


@pytest.mark.parametrize("jobs", ["0", "2"])
def test_jobs_option(cli, tmp_path, jobs):
    make_tree(tmp_path, n=30)
    r = cli(".", "--format", "json", "-j", jobs, "--no-cache")
    assert r.code == 1 and len(json.loads(r.out)) == 20


def test_unchanged_stat_means_the_file_is_not_even_opened(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    paths = [os.path.relpath(p) for p in make_tree(tmp_path, n=8)]
    old = 1_600_000_000
    for p in paths:
        os.utime(p, (old, old))  # not "racy": modified long before it is read
    key = settings_key("test", Settings())
    cache = ResultCache(tmp_path / "cache", key).load()
    cold = run(paths, Settings(), jobs=1, cache=cache)
    cache.save()
    opened = []
    real = file_pass.read_with_stat
    monkeypatch.setattr(file_pass, "read_with_stat", lambda p, *a: opened.append(p) or real(p, *a))
    warm = run(paths, Settings(), jobs=1, cache=ResultCache(tmp_path / "cache", key).load())
    assert opened == [] and warm.cache_hits == 8
    assert as_json(warm.diagnostics) == as_json(cold.diagnostics)
    # An edit changes size or mtime: that file is read again, and only that one.
    write(tmp_path / paths[2], CLEAN_SRC + "# edited\n")
    again = run(paths, Settings(), jobs=1, cache=ResultCache(tmp_path / "cache", key).load())
    assert opened == [paths[2]] and again.cache_hits == 7


def test_old_results_files_are_pruned(tmp_path):
    from analyzer.cache import KEEP_FILES

    for i in range(KEEP_FILES + 3):
        cache = ResultCache(tmp_path, settings_key("test", Settings(ignore=(f"TL10{i % 10}",) * (i + 1))))
        cache.put(str(tmp_path / "x.py"), b"h", [])
        assert cache.save() is None
        os.utime(cache.file, (1_000_000 + i, 1_000_000 + i))
    left = sorted(p.name for p in tmp_path.glob("results-*.pickle"))
    assert len(left) == KEEP_FILES + 1
    assert cache.file.name in left


def test_unwritable_cache_is_a_warning_not_a_failure(cli, tmp_path):
    write(tmp_path / "m.py", TL101_SRC)
    blocker = write(tmp_path / "not-a-folder", "")
    r = cli("m.py", "--format", "concise", "--cache-dir", str(blocker / "cache"))
    assert r.code == 1 and "TL101" in r.out
    assert "warning: could not write the cache" in r.err


def test_a_fully_cached_run_does_not_load_the_engine(tmp_path):
    import subprocess
    import sys

    from cli_helpers import REPO

    paths = make_tree(tmp_path, n=6)
    for p in paths:
        os.utime(p, (1_600_000_000, 1_600_000_000))
    probe = (
        "import sys, analyzer.cli; rc = analyzer.cli.main(['.', '--format', 'json', '-o', 'out.json']); "
        "print(rc, 'analyzer.static' in sys.modules, 'rules' in sys.modules)"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    runs = [subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, env=env) for _ in range(2)]
    assert runs[0].stdout.split() == ["1", "True", "True"], runs[0].stderr
    assert runs[1].stdout.split() == ["1", "False", "False"], runs[1].stderr



def test_a_run_in_one_process_does_not_load_the_pool(tmp_path):
    """concurrent.futures and multiprocessing cost ~10 ms of start-up: only a run that starts a pool loads them
    (one process and forked helpers do not)."""
    import subprocess
    import sys

    from cli_helpers import REPO

    make_tree(tmp_path, n=30)
    probe = ("import sys, analyzer.cli, analyzer.runner as r; {}; "
             "rc = analyzer.cli.main(['.', '--no-cache', '-o', 'out.json', '-j', '{}']); "
             "print(rc, 'concurrent.futures' in sys.modules, 'multiprocessing' in sys.modules)")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    loaded = {}
    for how, setup, jobs in (("one", "pass", 1), ("helpers", "r.SPLIT_BYTES = 0", 2), ("pool", "r.HOLD_BYTES = 0; r.can_fork = lambda: False", 2)):
        r = subprocess.run([sys.executable, "-c", probe.format(setup, jobs)], cwd=tmp_path, capture_output=True,
                           text=True, env=env)
        loaded[how] = r.stdout.split() or r.stderr
    assert loaded == {"one": ["1", "False", "False"], "helpers": ["1", "False", "False"], "pool": ["1", "True", "True"]}


def test_cache_file_cannot_smuggle_code(tmp_path):
    import pickle

    key = settings_key("test", Settings())
    cache = ResultCache(tmp_path, key)
    evil = {"key": key, "entries": {"/x.py": (b"h", (), os.system)}}  # a global: refused on load
    cache.file.write_bytes(pickle.dumps(evil))
    assert cache.load().entries == {}
    good = ResultCache(tmp_path, key)
    good.put("/x.py", b"h", [], (1, 2, 3, 4))
    assert good.save() is None
    assert ResultCache(tmp_path, key).load().entries == {"/x.py": (b"h", (), (1, 2, 3, 4))}


@pytest.mark.skipif(not os.path.isdir("/proc"), reason="reads process groups from /proc")
@pytest.mark.parametrize("how", ["helpers", "pool"])
def test_ctrl_c_stops_the_workers_at_once(tmp_path, how):
    import signal
    import subprocess
    import sys
    import time

    from cli_helpers import REPO

    make_tree(tmp_path, n=120)
    # The engine is slowed down (0.5 s a file: 30 s of work on 2 workers) so that the run is still busy when
    # Ctrl-C comes, and finishing the work (~28 s left) cannot pass for stopping at once (< 10 s, with room
    # for a loaded machine: it took 5.6 s once at load 8).
    probe = (
        # a shell starts background jobs (a CI runner, `cmd &`) with SIGINT ignored, and Python keeps it ignored:
        # give the run a terminal's disposition, or Ctrl-C would be tested against a process that cannot see it
        "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "import time, analyzer.static as s, analyzer.runner as r\n"
        + ("r.SPLIT_BYTES = 0\n" if how == "helpers" else "r.HOLD_BYTES = 0; r.can_fork = lambda: False\n") +
        "for name in ('lint_source', 'prepare_source'):\n"
        "    real = getattr(s, name)\n"
        "    setattr(s, name, lambda *a, real=real, **k: (time.sleep(0.5), real(*a, **k))[1])\n"
        "from analyzer.cli import main\n"
        "raise SystemExit(main(['.', '--no-cache', '-j', '2', '-q']))\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.Popen([sys.executable, "-c", probe], cwd=tmp_path, env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2.0)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole process group
    start = time.perf_counter()
    out, err = proc.communicate(timeout=60)
    assert time.perf_counter() - start < 10
    assert proc.returncode == 130 and "interrupted" in err
    assert _processes_in_group(proc.pid) == []


def _processes_in_group(pgid: int) -> list[int]:
    """PIDs whose process group is ``pgid`` (from /proc; the workers would be there if left behind)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == pgid and fields[0] != "Z":
                found.append(int(entry))
    return found



@pytest.mark.parametrize("how", ["helpers", "pool"])
def test_several_processes_name_the_same_entry_point_as_one(tmp_path, monkeypatch, how):
    """A function that two modules' forwards reach is named after one of them (the first in the project's file
    order), whatever order the processes return the files in (a pool hands out the biggest files first)."""
    monkeypatch.chdir(tmp_path)
    write(tmp_path / "pkg" / "__init__.py", "")
    write(tmp_path / "pkg" / "ops.py", "def scale(x):\n    return x * x.sum().item()\n")
    for name, padding in (("a", 0), ("b", 2000)):  # b.py, the biggest file, goes to a worker first
        write(tmp_path / "pkg" / f"{name}.py", "import torch\nfrom .ops import scale\n" + "# padding\n" * padding +
              f"\nclass {name.upper()}(torch.nn.Module):\n    def forward(self, x):\n        return scale(x)\n")
    paths = [os.path.relpath(p) for p in make_tree(tmp_path, n=26)] + ["pkg/__init__.py", "pkg/a.py", "pkg/b.py", "pkg/ops.py"]
    paths.sort()
    several_processes(monkeypatch, how)
    for jobs in (1, 2):
        result = run(paths, Settings(), jobs=jobs)
        messages = [d.message.splitlines()[0] for d in result.diagnostics if d.path == "pkg/ops.py"]
        assert messages and all(m.startswith("if `A` is compiled") for m in messages), (jobs, messages)


def test_parsed_trees_are_kept_only_within_the_memory_budget(tmp_path, monkeypatch):
    """hold_share keeps a file's parsed tree while the bytes kept stay within the budget; the rest are let go
    (REPARSE) and parsed again to lint, with the same findings."""
    monkeypatch.chdir(tmp_path)
    paths = [os.path.relpath(p) for p in make_tree(tmp_path, n=9)]
    parsed = [p for p in paths if SYNTAX_ERROR_SRC not in open(p).read()]  # (a syntax error holds nothing)
    budget = os.path.getsize(parsed[0]) + os.path.getsize(parsed[1])
    results = file_pass.hold_share(paths, Settings(), {}, budget)
    kept = [r.path for r in results if isinstance(r.held, tuple)]
    assert kept == parsed[:2]
    assert [r.path for r in results if r.held == file_pass.REPARSE] == parsed[2:]
    assert [r.path for r in file_pass.hold_share(paths, Settings(), {}, None) if isinstance(r.held, tuple)] == parsed
    for r in results:
        if r.held is not None:
            file_pass.lint_held(r, Settings(), ())
    expected = {r.path: r.diagnostics for r in (file_pass.process_file(p, Settings(), {}, ()) for p in paths)}
    assert {r.path: r.diagnostics for r in results} == expected and all(r.held is None for r in results)


def test_linted_trees_are_kept_only_where_the_process_exits_after_the_lint(tmp_path, monkeypatch):
    """The CLI's entry (which ends with os._exit) keeps each linted tree instead of freeing it node by node, out
    of the collector's sight (gc.freeze); a run through the API or ``main`` frees them, and findings are equal."""
    import gc
    import weakref

    from analyzer import cli

    monkeypatch.chdir(tmp_path)
    paths = [os.path.relpath(p) for p in make_tree(tmp_path, n=6)]
    monkeypatch.setattr(file_pass, "_kept_trees", None)
    freed = run(paths, Settings(), jobs=1)
    assert file_pass._kept_trees is None
    held = file_pass.hold_share(paths[:1], Settings(), {}, None)[0]
    tree = weakref.ref(held.held[0].tree)
    file_pass.lint_held(held, Settings(), ())
    assert tree() is None  # freed at once by reference counting

    monkeypatch.setattr(gc, "freeze", lambda: frozen.append(True))
    frozen = []
    file_pass.keep_linted_trees()
    try:
        kept = run(paths, Settings(), jobs=1)
        contexts = list(file_pass._kept_trees)
    finally:
        file_pass.keep_linted_trees(False)
    assert [d.__dict__ for d in kept.diagnostics] == [d.__dict__ for d in freed.diagnostics]
    linted = [p for p in paths if SYNTAX_ERROR_SRC not in open(p).read()]
    assert sorted(os.path.relpath(c.source.path) for c in contexts) == sorted(linted) and frozen == [True]
    assert file_pass._kept_trees is None

    # `main` (tests, embedders) keeps nothing; `entry`'s main(exits_after=True) does, except in --watch
    assert cli.main([*paths, "--no-cache", "-j", "1", "--quiet"]) in (0, 1) and file_pass._kept_trees is None
    try:
        assert cli.main([*paths, "--no-cache", "-j", "1", "--quiet"], exits_after=True) in (0, 1)
        assert len(file_pass._kept_trees) == len(linted)
    finally:
        file_pass.keep_linted_trees(False)
