"""The static linter, --fix and the reporters run where torch is not installed.

torch is the `torch` extra, so the pre-commit hook's environment has none; here `import torch` is made to
fail in a fresh interpreter (None in sys.modules) and the CLI must still lint and fix, while the dynamic
checks say clearly what they need.
"""

from __future__ import annotations

import os
import subprocess
import sys

from cli_helpers import CLEAN_SRC, REPO, TL101_SRC, write

NO_TORCH = "import sys; sys.modules['torch'] = None\n"


def _python(code: str, cwd) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO), THUNDER_LINT_CACHE_DIR=str(cwd / ".cache"))
    return subprocess.run([sys.executable, "-c", NO_TORCH + code], cwd=cwd, capture_output=True, text=True,
                          timeout=120, env=env)


def _cli(args: list[str], cwd) -> subprocess.CompletedProcess:
    return _python(f"from analyzer.cli import main\nsys.exit(main({args!r}))", cwd)


def test_lint_and_formats_without_torch(tmp_path):
    write(tmp_path / "bad.py", TL101_SRC)
    write(tmp_path / "ok.py", CLEAN_SRC)
    r = _cli(["--format", "concise", "bad.py", "ok.py"], tmp_path)
    assert r.returncode == 1, r.stderr
    assert "bad.py:6:5: TL101" in r.stdout and "ok.py" not in r.stdout
    r = _cli(["--format", "sarif", "bad.py"], tmp_path)
    assert r.returncode == 1 and '"ruleId": "TL101"' in r.stdout, r.stderr
    assert _cli(["ok.py"], tmp_path).returncode == 0


def test_fix_without_torch(tmp_path):
    bad = write(tmp_path / "bad.py", TL101_SRC)
    r = _cli(["--fix", "--unsafe-fixes", "bad.py"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "y = x.view(-1)" in bad.read_text()


def test_dynamic_checks_say_they_need_torch(tmp_path):
    r = _python("import analyzer\ntry:\n    analyzer.check(len, [])\nexcept ModuleNotFoundError as e:\n"
                "    print('name', e.name)\n    print(e)\n", tmp_path)
    assert r.returncode == 0, r.stderr
    assert "name torch" in r.stdout
    assert "analyzer.jit and analyzer.check need PyTorch" in r.stdout and "thunder-lint[torch]" in r.stdout


def test_run_says_it_needs_torch(tmp_path):
    write(tmp_path / "prog.py", "print('never runs')\n")
    r = _cli(["run", "prog.py"], tmp_path)
    assert r.returncode == 2
    assert "never runs" not in r.stdout
    assert "`thunder-lint run` needs PyTorch" in r.stderr and "thunder-lint[torch]" in r.stderr
