"""thunder-lint: compiler."""
