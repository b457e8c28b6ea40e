"""thunder-lint: analyzer/static."""
