"""thunder-lint: analyzer/report."""
