"""The CUDA tier reuses the differential suite's cases (tests/compiler)."""
import json
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "compiler"))


@pytest.fixture(autouse=True)
def report():
    """After every test (a run stopped by its time limit still leaves its counts): what nvFuser built, ran and
    refused in this process, to $THUNDER_LINT_NVFUSER_REPORT/<worker>.json when that is set."""
    yield
    where = os.environ.get("THUNDER_LINT_NVFUSER_REPORT")
    if where:
        from compiler.executors import nvfuser

        os.makedirs(where, exist_ok=True)
        name = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(os.path.join(where, f"{name}.json"), "w") as f:
            json.dump(nvfuser.statistics(), f, indent=1)
