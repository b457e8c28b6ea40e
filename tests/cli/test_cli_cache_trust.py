"""The results cache trusts only files signed with this user's secret: a planted or edited results file
(the attack: an empty findings list for a file that has findings) is a miss, never a hidden finding."""

from __future__ import annotations

import os
import pickle

from cli_helpers import TL101_SRC, write

from analyzer import cache as cache_mod
from analyzer.cache import ResultCache, content_hash, settings_key
from analyzer.runner import Settings, run


def _planted(tmp_path, path, signature):
    key = settings_key("test", Settings())
    entry = (content_hash(path.read_bytes()), (), signature)  # "no findings", for the right content
    return key, pickle.dumps({"key": key, "entries": {str(path): entry}})


def test_a_planted_cache_file_hides_nothing(tmp_path):
    p = write(tmp_path / "m.py", TL101_SRC)
    os.utime(p, (1_600_000_000, 1_600_000_000))
    st = os.stat(p)
    key, blob = _planted(tmp_path, p, (st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev))
    cache = ResultCache(tmp_path / "cache", key)
    cache.directory.mkdir()
    for forged in (blob, cache_mod._MAGIC + b"\0" * 32 + blob):  # unsigned, and signed with a wrong key
        cache.file.write_bytes(forged)
        result = run([str(p)], Settings(), jobs=1, cache=ResultCache(tmp_path / "cache", key).load())
        assert [d.code for d in result.diagnostics] == ["TL101"]
        assert result.cache_hits == 0


def test_an_edited_signed_file_is_a_miss_and_a_genuine_one_hits(tmp_path):
    p = write(tmp_path / "m.py", TL101_SRC)
    key = settings_key("test", Settings())
    cache = ResultCache(tmp_path / "cache", key).load()
    run([str(p)], Settings(), jobs=1, cache=cache)
    assert cache.save() is None
    again = run([str(p)], Settings(), jobs=1, cache=ResultCache(tmp_path / "cache", key).load())
    assert again.cache_hits == 1 and [d.code for d in again.diagnostics] == ["TL101"]
    blob = bytearray(cache.file.read_bytes())
    blob[-5] ^= 0x01  # one bit of the payload
    cache.file.write_bytes(bytes(blob))
    assert ResultCache(tmp_path / "cache", key).load().entries == {}


def test_the_secret_is_private_to_the_user(tmp_path, monkeypatch):
    secret_file = tmp_path / "home-cache" / "cache-secret"
    monkeypatch.setenv("THUNDER_LINT_CACHE_SECRET_FILE", str(secret_file))
    monkeypatch.setattr(cache_mod, "_process_secret", None)
    secret = cache_mod._secret()
    assert len(secret) == 32 and secret_file.read_bytes() == secret
    assert secret_file.stat().st_mode & 0o777 == 0o600
    monkeypatch.setattr(cache_mod, "_process_secret", None)
    assert cache_mod._secret() == secret  # read back, not made again
