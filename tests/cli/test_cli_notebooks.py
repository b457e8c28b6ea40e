"""Jupyter notebooks: linted cell by cell (code cells only, IPython magics neutralized), findings at
``cell N:line``, fixes written back into the notebook's JSON, compile calls seen by the project index."""

from __future__ import annotations

import json

import pytest
from cli_helpers import write

from analyzer.notebook import Notebook

MARKDOWN = {"cell_type": "markdown", "metadata": {}, "source": ["# Training\n", "Some text.\n"]}
OUTPUT = {"name": "stdout", "output_type": "stream", "text": ["done\n"]}


def code(source, outputs=()):
    return {"cell_type": "code", "execution_count": 1, "metadata": {"tags": ["keep"]}, "outputs": list(outputs),
            "source": source}


def notebook(*cells, language="python") -> str:
    nb = {"cells": list(cells), "metadata": {"kernelspec": {"display_name": "Python 3", "language": language,
                                                            "name": "python3"}, "language_info": {"name": language}},
          "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"  # as Jupyter writes it


# cell 2 defines the hazard (after magics that are not Python), cell 4 compiles it; cell 3 is bash
CELL_DEF = ["import torch\n", "%matplotlib inline\n", "!pip install -q einops\n", "\n", "def step(x):\n",
            "    flat = x.reshape(-1)\n", "    flat.add_(1)\n", "    return x"]
CELL_BASH = "%%bash\necho ((( not python"
CELL_USE = ["files = !ls\n", "torch.compile?\n", "fast = torch.compile(step)\n", "print(fast(torch.ones(2, 2)))"]
NB = notebook(MARKDOWN, code(CELL_DEF, [OUTPUT]), code(CELL_BASH), code(CELL_USE))


def test_findings_are_reported_at_their_cell_and_line(cli, tmp_path):
    write(tmp_path / "train.ipynb", NB)
    r = cli("train.ipynb", "--format", "concise", "--no-cache")
    assert r.code == 1, r.err
    assert r.out.splitlines()[0].startswith("train.ipynb:cell 2:7:5: TL101"), r.out
    full = cli("train.ipynb", "--no-cache")
    # the code frame is the cell's own lines, numbered in the cell
    assert "7 |     flat.add_(1)" in full.out and "6 |     flat = x.reshape(-1)" in full.out, full.out


def test_json_has_the_cell_and_the_line_in_the_cell(cli, tmp_path):
    write(tmp_path / "train.ipynb", NB)
    r = cli("train.ipynb", "--output-format", "json", "--no-cache")
    (d,) = json.loads(r.out)
    assert (d["cell"], d["line"], d["column"], d["end_line"]) == (2, 7, 5, 7)
    assert {e["line"] for f in d["fixes"] for e in f["edits"]} == {6}  # the fix's edits count in the cell too


def test_every_machine_format_says_the_cell(cli, tmp_path):
    write(tmp_path / "train.ipynb", NB)
    lines = cli("train.ipynb", "--output-format", "json-lines", "--no-cache").out
    assert json.loads(lines.splitlines()[0])["cell"] == 2
    gh = cli("train.ipynb", "--output-format", "github", "--no-cache").out
    assert "cell 2:7:5:" in gh and "line=" not in gh  # no line of the .ipynb file: it would point into the JSON
    sarif = json.loads(cli("train.ipynb", "--output-format", "sarif", "--no-cache").out)
    (res,) = sarif["runs"][0]["results"]
    assert res["properties"]["cell"] == 2 and res["properties"]["cellLine"] == 7
    assert "region" not in res["locations"][0]["physicalLocation"]


def test_magics_keep_the_cell_parsing_and_a_cell_magic_of_another_language_is_skipped():
    nb = Notebook(NB)
    compile(nb.source, "train.ipynb", "exec")  # the joined text is Python
    assert "echo" not in nb.source
    assert nb.cell_map.locate(nb.source.splitlines().index("fast = torch.compile(step)") + 1) == (4, 3)
    indented = Notebook(notebook(code(["for i in range(3):\n", "    %time f(i)\n", "    !echo hi\n", "x = 1"])))
    compile(indented.source, "nb", "exec")


def test_the_index_sees_a_notebooks_compile_calls(cli, tmp_path):
    # model.py has two modules; only the one the notebook compiles is linted as compiled
    write(tmp_path / "model.py", "import torch\nscale = {}\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
          "        return x * scale['a']\n\n\nclass Other(torch.nn.Module):\n    def forward(self, x):\n"
          "        return x * scale['b']\n")
    write(tmp_path / "run.ipynb", notebook(MARKDOWN, code(["import torch\n", "from model import Net\n"]),
                                           code(["%load_ext autoreload\n", "net = torch.compile(Net())"])))
    r = cli(".", "--output-format", "json", "--no-cache", "--select", "TL201")
    found = [(d["path"], d["line"]) for d in json.loads(r.out)]
    assert found == [("model.py", 7)], r.out + r.err
    # the compile site is named by its cell, as findings are (the index counts lines in the joined cells)
    assert "compiled by `torch.compile(Net())` at run.ipynb:cell 3:2" in json.loads(r.out)[0]["message"]
    cached = cli(".", "--output-format", "json", "--select", "TL201")
    assert cli(".", "--output-format", "json", "--select", "TL201").out == cached.out == r.out
    alone = cli("model.py", "--output-format", "json", "--no-cache", "--select", "TL201")
    assert len(json.loads(alone.out)) == 2  # without the notebook: the library default (every forward)


def test_fix_writes_back_into_the_notebook_keeping_outputs_metadata_and_format(cli, tmp_path):
    path = write(tmp_path / "train.ipynb", NB)
    r = cli("train.ipynb", "--fix", "--unsafe-fixes", "--no-cache", "--select", "TL101")
    assert r.code == 0, r.out + r.err
    after = path.read_text(encoding="utf-8")
    data = json.loads(after)
    before = json.loads(NB)
    fixed_cell = data["cells"][1]
    assert fixed_cell["source"][5] == "    flat = x.view(-1)\n"
    assert fixed_cell["source"][1:3] == ["%matplotlib inline\n", "!pip install -q einops\n"]  # magics as written
    assert fixed_cell["outputs"] == [OUTPUT] and fixed_cell["metadata"] == {"tags": ["keep"]}
    for i in (0, 2, 3):
        assert data["cells"][i] == before["cells"][i]
    assert data["metadata"] == before["metadata"]
    # only the fixed line differs: same indent, key order, final newline
    diff = [(a, b) for a, b in zip(NB.splitlines(), after.splitlines()) if a != b]
    assert diff == [('    "    flat = x.reshape(-1)\\n",', '    "    flat = x.view(-1)\\n",')]
    assert cli("train.ipynb", "--no-cache", "--select", "TL101").code == 0


def test_a_string_source_stays_a_string_and_a_cell_without_final_newline_keeps_none(tmp_path):
    nb = Notebook(notebook(code("import torch\ndef f(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    return x")))
    out = json.loads(nb.with_source(nb.source.replace("reshape", "view")))
    assert out["cells"][0]["source"] == "import torch\ndef f(x):\n    y = x.view(-1)\n    y.add_(1)\n    return x"


def test_a_fix_that_would_change_a_magic_line_is_refused_not_written():
    from analyzer.notebook import NotANotebook

    nb = Notebook(NB)
    with pytest.raises(NotANotebook):
        nb.with_source(nb.source.replace("    pass\n", "    x = 1\n", 1).replace("pass\n", "y = 2\n", 1))


def test_a_broken_notebook_is_tl002_not_a_crash(cli, tmp_path):
    write(tmp_path / "bad.ipynb", '{"cells": [')
    r = cli("bad.ipynb", "--output-format", "json", "--no-cache")
    (d,) = json.loads(r.out)
    assert d["code"] == "TL002" and "not a valid Jupyter notebook" in d["message"]


def test_a_notebook_of_another_language_has_nothing_to_lint(cli, tmp_path):
    write(tmp_path / "r.ipynb", notebook(code(["x <- c(1, 2)\n", "x.reshape(-1).add_(1)"]), language="R"))
    assert cli("r.ipynb", "--no-cache").code == 0


def test_folders_include_notebooks_by_default_and_the_cache_keeps_the_cell(cli, tmp_path):
    write(tmp_path / "pkg" / "train.ipynb", NB)
    first = cli("pkg", "--output-format", "concise")
    second = cli("pkg", "--output-format", "concise")  # answered from the cache
    assert first.out == second.out and "pkg/train.ipynb:cell 2:7:5: TL101" in second.out
    assert "pkg/train.ipynb" in cli("--show-files", "pkg").out


# --- pre-commit: several calls, each with some of the staged files ---------------------------------------
MODEL = ("import torch\nscale = {}\n\n\nclass Net(torch.nn.Module):\n    def forward(self, x):\n"
         "        return x * scale['a']\n\n\nclass Other(torch.nn.Module):\n    def forward(self, x):\n"
         "        return x * scale['b']\n")
TRAIN = "import torch\nfrom model import Net\nflag = [1]\n\n\n@torch.compile\ndef g(x):\n    return x * flag[0]\n\nnet = torch.compile(Net())\n"


def test_index_whole_project_gives_a_split_call_the_findings_of_one_call(cli, tmp_path):
    write(tmp_path / "pyproject.toml", "[project]\nname = 'p'\n")
    write(tmp_path / "model.py", MODEL)
    write(tmp_path / "train.py", TRAIN)
    whole = json.loads(cli("model.py", "train.py", "--output-format", "json", "--no-cache", "--select", "TL201").out)
    assert sorted((d["path"], d["line"]) for d in whole) == [("model.py", 7), ("train.py", 8)]
    # pre-commit's second call names model.py alone: without the flag the library default flags both forwards
    alone = json.loads(cli("model.py", "--output-format", "json", "--no-cache", "--select", "TL201").out)
    assert len(alone) == 2
    split = json.loads(cli("model.py", "--index-whole-project", "--output-format", "json", "--no-cache",
                           "--select", "TL201").out)
    assert [(d["path"], d["line"]) for d in split] == [("model.py", 7)]  # train.py read, not reported


def test_index_whole_project_fixes_only_the_named_files(cli, tmp_path):
    write(tmp_path / "pyproject.toml", "[project]\nname = 'p'\n")
    other = write(tmp_path / "other.py", "import torch\n\n\ndef f(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    return x\n")
    named = write(tmp_path / "named.py", other.read_text())
    r = cli("named.py", "--index-whole-project", "--fix", "--unsafe-fixes", "--no-cache", "--select", "TL101")
    assert r.code == 0, r.out + r.err
    assert "view" in named.read_text() and "reshape" in other.read_text()



def test_add_noqa_writes_into_the_cell_and_keeps_the_notebook_loadable(cli, tmp_path):
    path = write(tmp_path / "train.ipynb", NB)
    r = cli("train.ipynb", "--add-noqa", "--no-cache", "--select", "TL101")
    assert r.code == 0 and "Added 1 noqa directive" in r.err, r.err
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["cells"][1]["source"][6] == "    flat.add_(1)  # noqa: TL101\n"
    assert data["cells"][1]["outputs"] == [OUTPUT]
    assert cli("train.ipynb", "--no-cache", "--select", "TL101").code == 0


def test_a_notebook_on_stdin_is_read_as_a_notebook(cli, tmp_path):
    r = cli("--stdin-filename", "train.ipynb", "--output-format", "concise", "--select", "TL101", stdin=NB)
    assert r.code == 1 and r.out.startswith("train.ipynb:cell 2:7:5: TL101"), r.out + r.err
    fixed = cli("--stdin-filename", "train.ipynb", "--fix", "--unsafe-fixes", "--select", "TL101", stdin=NB)
    assert fixed.code == 0, fixed.err
    assert json.loads(fixed.out)["cells"][1]["source"][5] == "    flat = x.view(-1)\n"  # the notebook's JSON out


def test_python_that_looks_like_a_magic_stays_python_and_cells_may_await(cli, tmp_path):
    # `% 2)` and `!= 3)` continue a bracket, `!not magic` is inside a string: Python, not IPython's syntax;
    # IPython runs cells with top-level await; a form feed is not a line break to Python
    cell = ["import asyncio\n", "x = (1\n", "     % 2)\n", "y = (x\n", "     != 3)\n", "await asyncio.sleep(0)\n",
            "s = '''\n", "!not magic\n", "'''\n", "\x0c\n", "%time z = 1\n", "if x:\n", "    !echo hi\n", "t = 1"]
    nb = Notebook(notebook(code(cell)))
    plain = nb.source.split("\n")[:-1]  # (str.splitlines would split at the form feed too)
    assert plain[2] == "     % 2)" and plain[4] == "     != 3)" and plain[7] == "!not magic"  # untouched
    assert plain[10] == "pass" and plain[12] == "    pass"  # the real magics
    write(tmp_path / "edge.ipynb", notebook(code(cell)))
    r = cli("edge.ipynb", "--no-cache", "--output-format", "concise")
    assert r.code == 0, r.out
    assert nb.cell_map.locate(len(plain)) == (1, len(cell))  # line numbers kept through the form feed
