"""thunder-lint: server."""
