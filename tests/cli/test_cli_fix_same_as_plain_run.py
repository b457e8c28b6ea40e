"""After `--fix`, the report and the exit status are those of a plain run on the fixed files (issue 31).

`--fix` used to lint each file alone: findings that depend on the project (the library default, a function that
another file compiles) vanished from the report and the exit status ("2 fixed, 0 remaining", exit 0, while 35
remained), and their fixes were never offered.
"""

from __future__ import annotations

import json

from cli_helpers import write

# No compile call anywhere: the library default lints every nn.Module forward as compiled.
LIBRARY = {
    "pkg/__init__.py": "",
    "pkg/blocks.py": (
        "import torch\nfrom torch import nn\n\n\nclass Block(nn.Module):\n"
        "    def forward(self, x):\n"
        "        flat = x.reshape(-1)\n"  # TL101 (fixable: view)
        "        flat.add_(1)\n"
        "        print('step')\n"  # TL204, only under the library default
        "        return x\n"
    ),
}

# One file compiles what the other defines.
PROJECT = {
    "models.py": (
        "import torch\nfrom torch import nn\n\n\nclass Net(nn.Module):\n"
        "    def forward(self, x):\n"
        "        flat = x.reshape(-1)\n"
        "        flat.add_(1)\n"
        "        print('step')\n"
        "        return x\n"
    ),
    "train.py": "import torch\nfrom models import Net\n\nmodel = torch.compile(Net())\n",
}


def _json(cli, *args):
    r = cli(*args, "--format", "json")
    return r, json.loads(r.out)


def _check_fix_equals_plain_run(cli, tmp_path, files):
    for name, text in files.items():
        write(tmp_path / name, text)
    before, found = _json(cli, ".", "--no-cache")
    assert before.code == 1
    codes = sorted(d["code"] for d in found)
    assert "TL204" in codes and "TL101" in codes, codes
    fixed = cli(".", "--fix", "--unsafe-fixes", "--no-cache")
    after, remaining = _json(cli, ".", "--no-cache")
    left = [d["code"] for d in remaining]
    assert "TL101" not in left and "TL204" in left, left  # (the view fix may turn it into a TL102: part of the fix)
    # the --fix run's own report says the same as the plain run after it
    assert f"(1 fixed, {len(remaining)} remaining" in fixed.out, fixed.out
    assert fixed.code == after.code == 1
    # and the fix was the one the plain run offered
    assert any("view(-1)" in (tmp_path / n).read_text() for n in files)


def test_fix_under_the_library_default_keeps_its_findings(cli, tmp_path):
    _check_fix_equals_plain_run(cli, tmp_path, LIBRARY)


def test_fix_of_a_function_another_file_compiles(cli, tmp_path):
    _check_fix_equals_plain_run(cli, tmp_path, PROJECT)


def test_fix_json_report_equals_the_plain_runs(cli, tmp_path):
    for name, text in LIBRARY.items():
        write(tmp_path / name, text)
    r, reported = _json(cli, ".", "--fix", "--unsafe-fixes", "--no-cache")
    after, plain = _json(cli, ".", "--no-cache")
    key = lambda d: (d["path"], d["line"], d["column"], d["code"])  # noqa: E731
    assert sorted(map(key, reported)) == sorted(map(key, plain))
    assert r.code == after.code


def test_diff_offers_the_fix_of_a_function_another_file_compiles(cli, tmp_path):
    for name, text in PROJECT.items():
        write(tmp_path / name, text)
    r = cli(".", "--diff", "--unsafe-fixes", "--no-cache")
    assert "+        flat = x.view(-1)" in r.out, r.out + r.err
    assert r.code == 1


def test_fix_with_the_cache_on_twice(cli, tmp_path):
    for name, text in LIBRARY.items():
        write(tmp_path / name, text)
    cli(".")  # fills the cache
    fixed = cli(".", "--fix", "--unsafe-fixes")
    again, left = _json(cli, ".")
    assert f"(1 fixed, {len(left)} remaining" in fixed.out, fixed.out
    again = cli(".")
    assert again.code == 1 and "TL204" in again.out and "TL101" not in again.out
