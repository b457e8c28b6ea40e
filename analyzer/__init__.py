"""thunder-lint: analyzer."""
