"""Start-up of a small run: a 4-file tree with findings, printed in full, loads none of what it does not need
(each of these costs milliseconds of a run whose whole budget is a few tens of them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from cli_helpers import REPO, TL101_SRC, write

# torch and the compiler: only `thunder-lint run`; libcst: only to build a fix's text; fastapi: the service;
# pathspec: only where an ignore file exists; the notebook module (json, difflib): only for notebooks; the pool
# and of the standard library what only a cache file (pickle, hmac, OpenSSL's hashlib), JSON output or forked
# helpers (signal) need
NOT_NEEDED = ("torch", "compiler", "libcst", "fastapi", "pathspec", "analyzer.notebook", "difflib",
              "concurrent.futures", "multiprocessing", "json", "pickle", "hmac", "_hashlib", "signal")


def test_a_small_run_loads_only_what_it_needs(tmp_path):
    tree = tmp_path / "proj"
    for i in range(4):
        write(tree / f"m{i}.py", TL101_SRC)
    # (what the interpreter's own start loaded, a site .pth's imports, is not the linter's doing)
    probe = ("import sys; before = set(sys.modules); import analyzer.cli; rc = analyzer.cli.main(['proj', '--no-cache']); "
             f"print(rc, [m for m in {NOT_NEEDED!r} if m in sys.modules and m not in before], file=sys.stderr)")
    # no global git ignore file of the machine's user decides what loads
    env = dict(os.environ, PYTHONPATH=str(REPO), HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    r = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert "TL101" in r.stdout, r.stderr  # it linted, and printed the findings with their code frames
    assert r.stderr.strip().splitlines()[-1] == "1 []", r.stderr


def test_an_ignore_file_still_counts(tmp_path):
    """pathspec loads where an ignore file exists (the lazy import must not skip it)."""
    tree = tmp_path / "proj"
    write(tree / "kept.py", TL101_SRC)
    write(tree / "skipped.py", TL101_SRC)
    write(tree / ".gitignore", "skipped.py\n")
    (tree / ".git").mkdir()
    env = dict(os.environ, PYTHONPATH=str(REPO), HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "config"))
    r = subprocess.run([sys.executable, "-m", "analyzer.cli", "proj", "--no-cache", "--format", "json"], cwd=tmp_path,
                       capture_output=True, text=True, env=env)
    assert {os.path.basename(d["path"]) for d in json.loads(r.stdout)} == {"kept.py"}, r.stderr
