"""CI step 3 (.ci/nvfuser-venv) fails loudly, before and after downloading, and skips only when told to.

The success path (a 7.2 GB venv, ~7 min from PyPI) is what .ci/run itself runs; here the script runs against
a scratch cache with the reasons it must refuse: too little disk (checked before any download) and a
download that fails (an index on a closed loopback port), after which no half-built venv is left behind.
"""
from __future__ import annotations

import glob
import os
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / ".ci" / "nvfuser-venv"
PY312 = glob.glob(os.path.expanduser("~/.pyenv/versions/3.12.*/bin/python"))
needs_py312 = pytest.mark.skipif(not PY312, reason="no CPython 3.12 under ~/.pyenv/versions (the step needs it)")


def _run(tmp_path: Path, **env) -> subprocess.CompletedProcess:
    full = {k: v for k, v in os.environ.items() if not k.startswith("THUNDER_LINT_")}
    full.update(THUNDER_LINT_NVFUSER_CACHE=str(tmp_path / "cache"), **env)
    return subprocess.run([str(SCRIPT)], env=full, capture_output=True, text=True, timeout=240)


def test_skip_is_explicit_and_says_so(tmp_path):
    r = _run(tmp_path, THUNDER_LINT_CI_NVFUSER="skip")
    assert r.returncode == 0 and "the nvFuser definition tests did not run" in r.stderr
    assert not (tmp_path / "cache").exists()


@needs_py312
def test_too_little_disk_fails_before_downloading(tmp_path):
    r = _run(tmp_path, THUNDER_LINT_NVFUSER_NEED_GB="1000000")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "not enough free disk: the venv needs 1000000 GB at" in r.stderr and "THUNDER_LINT_CI_NVFUSER=skip" in r.stderr
    assert list((tmp_path / "cache").iterdir()) == []  # nothing created, nothing downloaded


@needs_py312
def test_a_failed_download_fails_and_leaves_no_half_built_venv(tmp_path):
    # pip with no configuration files, no local wheels and an index nobody listens on
    r = _run(tmp_path, PIP_CONFIG_FILE=os.devnull, PIP_FIND_LINKS="", PIP_EXTRA_INDEX_URL="",
             PIP_INDEX_URL="http://127.0.0.1:9/simple", PIP_RETRIES="0", PIP_DEFAULT_TIMEOUT="5")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "creating the venv failed (download or install error above)" in r.stderr
    assert "building" in r.stdout and list((tmp_path / "cache").iterdir()) == []
