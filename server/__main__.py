"""``python -m server``: the same as ``thunder-lint serve``."""

import sys

from .cli import serve_main

if __name__ == "__main__":
    sys.exit(serve_main())
