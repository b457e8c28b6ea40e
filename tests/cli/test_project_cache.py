"""The project-level pass cached and incremental (analyzer/project_pass.py), and the index linear in the project.

Every step compares the cached run's findings with a run without the cache on the same (edited) tree, and counts
what the cached run did: index builds, summary-store reads and the files the engine linted.
"""

from __future__ import annotations

import ast
import os
import time

import pytest

from analyzer import project_pass, static
from analyzer.cache import ResultCache, settings_key
from analyzer.project.index import ProjectIndex, summarize
from analyzer.runner import Settings, run
from analyzer.static.module_index import build_module_index
from cli_helpers import write

NET = '''\
import torch
from torch import nn
from .blocks import Block


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        y = self.block(x)
        if x.sum().item() > 0:
            y = y * 2
        return y
'''
BLOCKS = '''\
from torch import nn

counter = 0


class Block(nn.Module):
    def forward(self, x):
        global counter
        counter += 1
        return x * 2
'''
OTHER = "import torch\n\n\ndef f(x):\n    y = x.reshape(-1)\n    y.add_(1)\n    return x\n"
TRAIN_COMPILES = "import torch\nfrom models.net import Net\n\nmodel = torch.compile(Net(), dynamic=True)\n"
TRAIN_EAGER = "import torch\nfrom models.net import Net\n\nmodel = Net()\n"


class Counts:
    """What a run did: index builds, summary-store reads, the files the engine linted."""

    def __init__(self, monkeypatch):
        self.builds, self.store_loads, self.linted = 0, 0, []
        counts = self

        class CountedIndex(ProjectIndex):
            def __init__(self, *args, **kwargs):
                counts.builds += 1
                super().__init__(*args, **kwargs)

        monkeypatch.setattr(project_pass, "ProjectIndex", CountedIndex)
        real_load = project_pass.SummaryStore.load

        def load(store):
            counts.store_loads += 1
            return real_load(store)

        monkeypatch.setattr(project_pass.SummaryStore, "load", load)
        # what runs the rules on a file: whole (lint_source) or the second half of a held file (check_prepared)
        for name in ("lint_source", "check_prepared"):
            def counted(first, *args, real=getattr(static, name), name=name, **kw):
                path = first.source.path if name == "check_prepared" else (args[0] if args else kw.get("path"))
                counts.linted.append(os.path.basename(path))
                return real(first, *args, **kw)

            monkeypatch.setattr(static, name, counted)

    def reset(self):
        self.builds, self.store_loads, self.linted = 0, 0, []


def paths_of(root) -> list[str]:
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
                  if f.endswith(".py") and ".cache" not in d)


def findings(result):
    return [d.to_json() for d in result.diagnostics]


@pytest.fixture
def project(tmp_path, monkeypatch):
    src = tmp_path / "src"
    write(src / "models" / "__init__.py", "")
    write(src / "models" / "net.py", NET)
    write(src / "models" / "blocks.py", BLOCKS)
    write(src / "other.py", OTHER)
    monkeypatch.chdir(src)
    settings = Settings(root=str(src))
    key = settings_key("test", settings)

    def cached():
        cache = ResultCache(tmp_path / "cache", key).load()
        result = run(paths_of(src), settings, jobs=1, cache=cache)
        assert cache.save() is None
        return result

    def uncached():
        return run(paths_of(src), settings, jobs=1, cache=None)

    return src, cached, uncached


@pytest.mark.parametrize("hold", [True, False], ids=["held", "reparsed"])
def test_cold_warm_and_each_edit_equal_a_run_without_the_cache(project, monkeypatch, hold):
    from analyzer import runner

    if not hold:  # no parsed tree kept past the summaries: each file parsed again to lint
        monkeypatch.setattr(runner, "HOLD_LIMIT_BYTES", 0)
    src, cached, uncached = project
    counts = Counts(monkeypatch)
    cold = cached()
    # a cold run lints each file once, with its final facts (kept parsed or parsed again)
    assert sorted(counts.linted) == sorted(os.path.basename(p) for p in paths_of(src))
    assert counts.builds == 1 and findings(cold) == findings(uncached())
    assert "if `Net` is compiled" in " ".join(d.message for d in cold.diagnostics)  # the library default

    # Nothing changed: no index, no summaries read, nothing linted.
    counts.reset()
    warm = cached()
    assert (counts.builds, counts.store_loads, counts.linted) == (0, 0, [])
    assert findings(warm) == findings(cold) and warm.library_default == cold.library_default

    # An edit that changes no summary (a constant in a body, same lines): only that file is linted, no index.
    write(src / "models" / "blocks.py", BLOCKS.replace("x * 2", "x * 3"))
    counts.reset()
    got = cached()
    assert (counts.builds, counts.store_loads, counts.linted) == (0, 0, ["blocks.py"])
    assert findings(got) == findings(uncached())

    # Lines added to a file with no compile call: where its functions start changes nothing for the others (no
    # index); its new summary waits in the results cache for the next build (which then need not lint it again).
    write(src / "other.py", "# a comment\n\n" + OTHER)
    counts.reset()
    got = cached()
    assert (counts.builds, counts.store_loads, counts.linted) == (0, 0, ["other.py"])
    assert findings(got) == findings(uncached())
    assert [d.line for d in got.diagnostics if d.path == "other.py"] == [8]

    # A compile call appears: the index is built again and the files whose facts it changes are linted again, not
    # the file it says nothing about.
    write(src / "train.py", TRAIN_COMPILES)
    counts.reset()
    got = cached()
    assert counts.builds == 1 and counts.store_loads == 1
    assert sorted(set(counts.linted)) == ["blocks.py", "net.py", "train.py"]
    assert findings(got) == findings(uncached())
    assert "compiled by `torch.compile(Net(), dynamic=True)` at train.py:4" in " ".join(d.message for d in got.diagnostics)
    counts.reset()
    assert findings(cached()) == findings(got) and (counts.builds, counts.linted) == (0, [])

    # ... and goes away again: the library default is back.
    write(src / "train.py", TRAIN_EAGER)
    counts.reset()
    got = cached()
    assert counts.builds == 1 and "other.py" not in counts.linted
    assert findings(got) == findings(uncached())

    # A file removed.
    (src / "train.py").unlink()
    counts.reset()
    got = cached()
    assert counts.builds == 1 and findings(got) == findings(uncached())


def test_a_package_made_by_a_new_init_renames_its_unchanged_modules(tmp_path, monkeypatch):
    """``from models.net import Net`` names a module only once models/ is a package: the summaries of the
    unchanged files (their module names) are made again, as a run without the cache makes them."""
    src = tmp_path / "src"
    write(src / "models" / "net.py", NET.replace("from .blocks import Block", "from models.blocks import Block"))
    write(src / "models" / "blocks.py", BLOCKS)
    write(src / "train.py", TRAIN_COMPILES)
    monkeypatch.chdir(src)
    settings = Settings(root=str(src))
    key = settings_key("test", settings)

    def cached():
        cache = ResultCache(tmp_path / "cache", key).load()
        result = run(paths_of(src), settings, jobs=1, cache=cache)
        cache.save()
        return result

    before = cached()
    assert findings(before) == findings(run(paths_of(src), settings, jobs=1))
    write(src / "models" / "__init__.py", "")
    after = cached()
    assert findings(after) == findings(run(paths_of(src), settings, jobs=1)) != findings(before)
    assert "compiled by `torch.compile(Net(), dynamic=True)`" in " ".join(d.message for d in after.diagnostics)


def test_an_edit_in_a_file_the_index_read_rebuilds_it(tmp_path, monkeypatch):
    """A wrapper's callers are read beyond their summaries (``setup(Net())`` compiles Net): an edit there that leaves
    the summary as it was still counts."""
    src = tmp_path / "src"
    write(src / "net.py", NET.replace("from .blocks import Block", "from blocks import Block"))
    write(src / "blocks.py", BLOCKS)
    write(src / "setup.py", "import torch\n\n\ndef setup(model):\n    return torch.compile(model)\n")
    write(src / "train.py", "from setup import setup\nfrom net import Net\nfrom blocks import Block\n\n"
                            "model = setup(Net())\n")
    monkeypatch.chdir(src)
    settings = Settings(root=str(src))
    key = settings_key("test", settings)

    def cached():
        cache = ResultCache(tmp_path / "cache", key).load()
        result = run(paths_of(src), settings, jobs=1, cache=cache)
        cache.save()
        return result

    first = cached()
    assert findings(first) == findings(run(paths_of(src), settings, jobs=1))
    assert "compiled by `setup(Net())` at train.py:5" in " ".join(d.message for d in first.diagnostics)
    assert cache_project(tmp_path, key)["read"], "the index read the wrapper's callers"
    write(src / "train.py", "from setup import setup\nfrom net import Net\nfrom blocks import Block\n\n"
                            "model = setup(Block())\n")
    second = cached()
    assert findings(second) == findings(run(paths_of(src), settings, jobs=1)) != findings(first)


def cache_project(tmp_path, key) -> dict:
    return ResultCache(tmp_path / "cache", key).load().project


# --- linear in the project -----------------------------------------------------------------------------------
def _summaries(n: int) -> list[dict]:
    """``n`` modules of a library: five module classes each, whose forwards call a block of the module before."""
    out = []
    for i in range(n):
        prev = f"from pkg.m{i - 1} import Block0 as Prev\n" if i else "from torch import nn as Prev\n"
        classes = "".join(
            f"class Block{k}(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
            f"        self.inner = {'Prev.Linear(1, 1)' if not i else 'Prev()'}\n\n"
            f"    def forward(self, x):\n        return self.helper(self.inner(x))\n\n"
            f"    def helper(self, x):\n        return x.relu()\n\n\n" for k in range(5))
        text = f"from torch import nn\n{prev}\n\n{classes}"
        tree = ast.parse(text)
        path = f"/p/pkg/m{i}.py"
        out.append(summarize(text, tree, build_module_index(tree), path, f"pkg.m{i}"))
    return out


class CountingDict(dict):
    """The index's compiled functions, counting how many a caller iterates over."""

    visited = 0

    def items(self):
        for kv in super().items():
            CountingDict.visited += 1
            yield kv


def test_every_files_facts_together_visit_each_compiled_function_once():
    summaries = _summaries(60)
    index = ProjectIndex(summaries, "/p")
    expected = {s["path"]: index.facts_for(s["module"], s["path"]) for s in summaries}
    again = ProjectIndex(summaries, "/p")
    again.compiled = CountingDict(again.compiled)
    CountingDict.visited = 0
    assert {s["path"]: again.facts_for(s["module"], s["path"]) for s in summaries} == expected
    assert len(again.compiled) == 60 * 5 * 2  # every forward and its helper, by the library default
    assert CountingDict.visited == len(again.compiled)  # not once per file


def test_the_index_does_work_linear_in_the_project(monkeypatch):
    """What the build asks (a method through the bases, what a name resolves to, what a function reaches) grows as
    the project does: each answer is worked out once, however many walks ask for it."""
    calls = []
    for name in ("_method_at", "_resolve", "_reached", "_submodule_classes_at"):
        real = getattr(ProjectIndex, name)

        def counted(self, *args, real=real, **kwargs):
            calls.append(1)
            return real(self, *args, **kwargs)

        monkeypatch.setattr(ProjectIndex, name, counted)
    work = []
    for n in (100, 400):
        calls.clear()
        ProjectIndex(_summaries(n), "/p")
        work.append(len(calls))
    assert work[1] <= 4.2 * work[0], work


# --- the warm run's other costs: each folder looked in for a config once ------------------------------------------
def test_config_lookups_sharing_a_memo_answer_as_each_alone(tmp_path, monkeypatch):
    from analyzer import config

    write(tmp_path / "pyproject.toml", "[tool.thunder-lint]\nselect = ['TL1']\n")
    write(tmp_path / "a" / "b" / "c" / "m.py", "")
    write(tmp_path / "a" / "pyproject.toml", "[project]\nname = 'not ours'\n")  # no table: not a config
    write(tmp_path / "d" / "thunder-lint.toml", "select = ['TL2']\n")
    write(tmp_path / "d" / "e" / "m.py", "")
    folders = [tmp_path / "a" / "b" / "c", tmp_path / "d" / "e", tmp_path / "a", tmp_path, tmp_path / "d"]
    alone = [config.find_pyproject(f) for f in folders]
    assert alone[1] == alone[4] == str(tmp_path / "d" / "thunder-lint.toml")
    memo: dict = {}
    looked = []
    real = config._config_in
    monkeypatch.setattr(config, "_config_in", lambda folder: looked.append(folder) or real(folder))
    assert [config.find_pyproject(f, memo) for f in folders] == alone
    assert len(looked) == len(set(looked))  # each folder looked in once
    assert alone[0] == alone[2] == alone[3] == str(tmp_path / "pyproject.toml")


def test_warm_runs_answer_every_file_by_its_stat_and_write_nothing(project, monkeypatch):
    """A warm run used to store the files it answered by their stat without that stat, so every other warm run
    opened and hashed every file again (and took its stat answers for fresh results)."""
    from analyzer import file_pass

    src, cached, uncached = project
    old = 1_600_000_000
    for p in paths_of(src):
        os.utime(src / p, (old, old))  # not "racy": modified long before it is read
    cold = cached()
    opened = []
    real = file_pass.read_with_stat
    monkeypatch.setattr(file_pass, "read_with_stat", lambda p, *a: opened.append(p) or real(p, *a))
    writes = []
    real_save = ResultCache.save
    monkeypatch.setattr(ResultCache, "save", lambda self: writes.append(self.dirty) or real_save(self))
    for _ in range(3):
        assert findings(cached()) == findings(cold)
    assert opened == [] and writes == [False, False, False]


def test_a_file_that_failed_in_a_build_leaves_no_facts_of_an_older_one(project, monkeypatch):
    """net.py's lint raised while the index was being rebuilt (its result is not cached): the next run lints it
    with the facts of the index as it is, never with those an older build stored for it."""
    src, cached, uncached = project
    cached()
    write(src / "train.py", TRAIN_COMPILES)
    for name in ("lint_source", "prepare_source", "check_prepared"):
        def failing(*args, real=getattr(static, name), **kw):
            path = kw.get("path") or (args[1] if len(args) > 1 and isinstance(args[1], str) else "")
            if str(path).endswith("net.py") or (args and getattr(args[0], "path", "").endswith("net.py")):
                raise RuntimeError("an engine bug")
            return real(*args, **kw)

        monkeypatch.setattr(static, name, failing)
    broken = cached()
    assert any("an engine bug" in e for e in broken.errors), broken.errors
    monkeypatch.undo()
    monkeypatch.chdir(src)
    assert findings(cached()) == findings(uncached())
