"""Make `compiler.interpreter` importable where torch is missing (CI runs these tests on 3.11-3.13 without
torch): if importing the `compiler` package fails, register it as a bare namespace over its folder so
that only the (torch-free) interpreter subpackage is loaded."""
import os
import sys
import types

os.environ.setdefault("THUNDER_LINT_CHECK_STACK", "1")  # the per-instruction stack-effect check is on in tests

try:
    import compiler  # noqa: F401
except ImportError:
    sys.modules.pop("compiler", None)
    _root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    _package = types.ModuleType("compiler")
    _package.__path__ = [os.path.join(_root, "compiler")]
    sys.modules["compiler"] = _package
