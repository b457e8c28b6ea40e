"""The import rules of pyproject.toml's [tool.importlinter], as CI runs them (`lint-imports`): the project's layers
(server -> analyzer -> rules -> compiler), the compiler's layers (compiler/README.md) and no import circles. Each
rule is shown to catch what it is for by injecting that import into a copy of the sources: an upward import at
module level, one hidden inside a function, and a circle between two modules of one layer."""
from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("server", "analyzer", "rules", "compiler")
LINT_IMPORTS = shutil.which("lint-imports")
pytestmark = pytest.mark.skipif(LINT_IMPORTS is None, reason="import-linter is not installed (the dev extra has it)")


def lint_imports(where: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(where)}  # the copy's packages, not the installed ones
    return subprocess.run([LINT_IMPORTS, "--config", str(where / "pyproject.toml"), "--no-cache"], cwd=where, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def copy(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("sources")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, where / package, ignore=shutil.ignore_patterns("__pycache__", "*.md"))
    shutil.copy(ROOT / "pyproject.toml", where / "pyproject.toml")
    return where


def test_the_tree_keeps_every_contract():
    out = lint_imports(ROOT)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Contracts: 3 kept, 0 broken." in out.stdout


def inject(copy: Path, relpath: str, text: str):
    path = copy / relpath
    original = path.read_text()
    path.write_text(original + "\n" + text + "\n")
    return lambda: path.write_text(original)


@pytest.mark.parametrize("relpath, text, broken", [
    ("compiler/core/errors.py", "from ..runtime import cache  # upward", "the compiler's layers"),
    ("compiler/meta/functions.py", "def later():\n    from ..frontend import segments  # upward, inside a function\n",
     "the compiler's layers"),
    ("compiler/symbolic/sizes.py", "from .shapes import for_op  # shapes imports sizes: a circle", "no import circles"),
    ("compiler/core/trace.py", "import analyzer  # the compiler imports nothing above it",
     "the project's layers"),
    ("rules/__init__.py", "def later():\n    from analyzer import cli  # rules sit below the analyzer\n",
     "the project's layers"),
])
def test_an_injected_import_breaks_its_contract(copy, relpath, text, broken):
    undo = inject(copy, relpath, text)
    try:
        out = lint_imports(copy)
    finally:
        undo()
    assert out.returncode != 0, out.stdout
    assert f"{broken}" in out.stdout and "BROKEN" in out.stdout.split(broken, 1)[1].splitlines()[0], out.stdout


def test_no_private_name_is_imported_across_layers():
    """A layer's private names (a leading underscore) stay inside it; other layers use its public names."""
    def layer(module: str) -> str:
        parts = module.split(".")
        return ".".join(parts[:2]) if parts[0] == "compiler" and len(parts) > 1 else parts[0]

    found = []
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            base = module.removesuffix(".__init__") if path.name == "__init__.py" else module.rsplit(".", 1)[0]
            module = module.removesuffix(".__init__")
            for node in ast.walk(ast.parse(path.read_text())):
                if not isinstance(node, ast.ImportFrom):
                    continue
                if node.level:
                    parts = base.split(".")
                    target = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                if target.split(".")[0] not in PACKAGES or layer(target) == layer(module):
                    continue
                for alias in node.names:
                    private = [p for p in (*target.split("."), alias.name) if p.startswith("_") and not p.startswith("__")]
                    if private:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {alias.name} from {target}")
    assert not found, "\n".join(found)


def test_the_compiler_is_a_few_layers_each_with_a_readme():
    compiler = ROOT / "compiler"
    loose = sorted(p.name for p in compiler.glob("*.py"))
    assert len(loose) <= 12, loose
    layers = sorted(p.name for p in compiler.iterdir() if (p / "__init__.py").exists())
    assert layers == sorted(["core", "meta", "symbolic", "features", "torchlang", "passes", "executors", "frontend",
                             "runtime", "interpreter"])
    for name in layers:
        readme = (compiler / name / "README.md").read_text()
        assert "May import:" in readme and "Entry point" in readme, name


def test_the_interpreter_layer_imports_neither_torch_nor_the_rest():
    """compiler.interpreter runs on Pythons without torch (.ci/run tests it on 3.12 and 3.13)."""
    code = ("import sys, types, os; p = types.ModuleType('compiler'); p.__path__ = [os.path.join(sys.argv[1], 'compiler')];"
            "sys.modules['compiler'] = p; import compiler.interpreter;"
            "bad = sorted(m for m in sys.modules if m == 'torch' or (m.startswith('compiler.') and "
            "not m.startswith('compiler.interpreter'))); print(bad); sys.exit(bool(bad))")
    out = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
