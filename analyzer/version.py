"""The tool's version, in one place (the SARIF driver, the cache key and ``--version`` read it)."""

__version__ = "0.1.0"  # keep equal to [project].version in pyproject.toml (a test checks)
