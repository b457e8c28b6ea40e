"""Every endpoint of a real server over HTTP, and /analyze against the CLI byte for byte."""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys

from server_helpers import CLEAN_SRC, HAZARDS_SRC, REPO, SYNTAX_ERROR_SRC, TL101_SRC

from analyzer.version import __version__
from analyzer.static import lint_source
from rules import RULES, render_docs


def _post(api, files, fmt=None, **options):
    body = {"files": [{"path": p, "content": c} for p, c in files], **options}
    return api.post("/analyze", json=body, params={"format": fmt} if fmt else None)


def test_healthz_and_version(api):
    health = api.get("/healthz")
    assert health.status_code == 200
    assert health.json()["status"] == "ok" and health.json()["workers"] == 2
    version = api.get("/version").json()
    assert version["name"] == "thunder-lint"
    assert version["version"] == __version__
    assert version["rules"] == list(RULES)


def test_rules_list_and_docs(api):
    rows = api.get("/rules").json()
    assert [r["code"] for r in rows] == list(RULES)
    assert {r["code"]: r["fixable"] for r in rows}["TL101"] is True
    page = api.get("/rules/TL101")
    assert page.status_code == 200
    assert page.json()["docs"] == render_docs("TL101")
    assert api.get("/rules/tl202").json()["code"] == "TL202"  # case does not matter
    assert api.get("/rules/closure-capture").json()["code"] == "TL202"  # nor code vs name


def test_unknown_rule_and_endpoint_are_json_404(api):
    for path in ("/rules/TL999", "/rules/nope", "/no/such/thing"):
        r = api.get(path)
        assert r.status_code == 404, path
        assert r.headers["content-type"].startswith("application/problem+json")
        assert r.json()["code"] in ("unknown_rule", "not_found") and r.json()["status"] == 404
    assert api.get("/analyze").status_code == 405


def test_analyze_reports_findings_per_file_results_and_summary(api):
    r = _post(api, [("pkg/model.py", TL101_SRC), ("clean.py", CLEAN_SRC), ("hazards.py", HAZARDS_SRC)])
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["version"] == __version__
    # Exactly the library's findings, sorted as the CLI sorts them.
    expected = sorted(
        lint_source(TL101_SRC, "pkg/model.py") + lint_source(CLEAN_SRC, "clean.py") + lint_source(HAZARDS_SRC, "hazards.py"),
        key=lambda d: d.sort_key(),
    )
    assert body["diagnostics"] == [d.to_json() for d in expected]
    codes = [(d["path"], d["code"]) for d in body["diagnostics"]]
    assert ("pkg/model.py", "TL101") in codes and len({c for p, c in codes if p == "hazards.py"}) >= 3
    assert not [c for p, c in codes if p == "clean.py"]
    assert [f["path"] for f in body["files"]] == ["pkg/model.py", "clean.py", "hazards.py"]
    assert body["files"][0]["sha256"] == hashlib.sha256(TL101_SRC.encode()).hexdigest()
    assert all("error" not in f and "fixed_content" not in f for f in body["files"])
    summary = body["summary"]
    assert summary["files"] == 3 and summary["diagnostics"] == len(body["diagnostics"])
    assert sum(summary["by_code"].values()) == len(body["diagnostics"])
    assert sum(summary["by_severity"].values()) == len(body["diagnostics"])
    assert summary["version"] == __version__ and len(summary["settings_hash"]) == 64
    assert r.headers["x-request-id"]


def test_selection_changes_findings_and_settings_hash(api):
    everything = _post(api, [("h.py", HAZARDS_SRC)]).json()
    all_codes = {d["code"] for d in everything["diagnostics"]}
    only_tl3 = _post(api, [("h.py", HAZARDS_SRC)], select=["TL3"]).json()
    assert {d["code"] for d in only_tl3["diagnostics"]} == {c for c in all_codes if c.startswith("TL3")}
    ignored = _post(api, [("h.py", HAZARDS_SRC)], ignore=["TL2", "TL302"]).json()
    assert {d["code"] for d in ignored["diagnostics"]} == {c for c in all_codes if not c.startswith("TL2") and c != "TL302"}
    assert {d["code"] for d in ignored["diagnostics"]} != all_codes  # the sample has findings of both kinds
    hashes = {everything["summary"]["settings_hash"], only_tl3["summary"]["settings_hash"], ignored["summary"]["settings_hash"]}
    assert len(hashes) == 3
    again = _post(api, [("other.py", CLEAN_SRC)]).json()
    assert again["summary"]["settings_hash"] == everything["summary"]["settings_hash"]


def test_syntax_error_is_a_per_file_result(api):
    r = _post(api, [("bad.py", SYNTAX_ERROR_SRC), ("good.py", TL101_SRC)])
    assert r.status_code == 200
    body = r.json()
    bad, good = body["files"]
    assert bad["error"].startswith("syntax error")
    assert "error" not in good
    assert [d["code"] for d in body["diagnostics"] if d["path"] == "bad.py"] == ["TL001"]
    assert body["summary"]["files_with_errors"] == 1


def test_fix_returns_fixed_content_and_remaining_findings(api):
    safe = _post(api, [("m.py", TL101_SRC)], fix=True).json()
    assert safe["files"][0]["fixed_content"] == TL101_SRC  # TL101's fixes are unsafe: nothing applied
    assert safe["summary"]["fixed"] == 0
    unsafe = _post(api, [("m.py", TL101_SRC)], fix=True, unsafe_fixes=True).json()
    fixed = unsafe["files"][0]["fixed_content"]
    assert fixed != TL101_SRC and "reshape(-1)" not in fixed.split("y.add_")[0].splitlines()[-1] or ".clone()" in fixed
    assert unsafe["summary"]["fixed"] >= 1
    assert "TL101" not in {d["code"] for d in unsafe["diagnostics"]}
    # The same as the library's fix_source.
    from analyzer.static import fix_source

    assert fixed == fix_source(TL101_SRC, "m.py", unsafe=True).text


def _cli(tmp_path, fmt, names):
    result = subprocess.run(
        [sys.executable, "-m", "analyzer.cli", "--format", fmt, "--no-cache", "--exit-zero", "-q", *names],
        cwd=tmp_path, capture_output=True, timeout=120, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_sarif_github_and_json_are_the_cli_bytes(api, tmp_path):
    files = [("pkg/model.py", TL101_SRC), ("hazards.py", HAZARDS_SRC), ("bad.py", SYNTAX_ERROR_SRC), ("ok.py", CLEAN_SRC)]
    for name, text in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    names = [n for n, _ in files]
    sarif = _post(api, files, "sarif")
    assert sarif.status_code == 200
    assert sarif.headers["content-type"].startswith("application/sarif+json")
    assert sarif.content == _cli(tmp_path, "sarif", names)
    assert json.loads(sarif.content)["version"] == "2.1.0"
    github = _post(api, files, "github")
    assert github.headers["content-type"].startswith("text/plain")
    assert github.content == _cli(tmp_path, "github", names)
    assert github.text.count("::error") >= 3
    as_json = _post(api, files).json()
    assert as_json["diagnostics"] == json.loads(_cli(tmp_path, "json", names))
    # One file goes to one worker, which renders itself (several are merged and rendered at the end).
    single = _post(api, files[:1], "sarif")
    assert single.content == _cli(tmp_path, "sarif", names[:1])


def test_paths_are_labels_only(api, tmp_path):
    marker = tmp_path / "must-not-exist.py"
    labels = ["/etc/passwd", "../../../etc/shadow", str(marker), "a/../../b.py", "C:\\x\\y.py", "naïve ü/ß.py"]
    r = _post(api, [(p, TL101_SRC) for p in labels])
    assert r.status_code == 200, r.text
    body = r.json()
    assert [f["path"] for f in body["files"]] == labels
    assert {d["path"] for d in body["diagnostics"]} == set(labels)
    assert not marker.exists()
    # A real file's content is never read: the label's findings are those of the submitted text.
    clean = _post(api, [("/etc/passwd", CLEAN_SRC)]).json()
    assert clean["files"][0]["sha256"] == hashlib.sha256(CLEAN_SRC.encode()).hexdigest()
    assert clean["diagnostics"] == []
    sarif = _post(api, [("../outside.py", TL101_SRC)], "sarif").json()
    uri = sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert str(REPO) not in uri and "work" not in uri  # nothing about the server's folders leaks


def test_base64_content_is_decoded_like_the_cli(api):
    latin1 = "# -*- coding: latin-1 -*-\nname = 'café'\n".encode("latin-1")
    not_utf8 = b"x = '\xff\xfe'\n"
    binary = b"\x00\x01\x02 binary"
    files = [
        {"path": "latin1.py", "content_base64": base64.b64encode(latin1).decode()},
        {"path": "broken.py", "content_base64": base64.b64encode(not_utf8).decode()},
        {"path": "blob.py", "content_base64": base64.b64encode(binary).decode()},
        {"path": "tl101.py", "content_base64": base64.b64encode(TL101_SRC.encode()).decode()},
    ]
    r = api.post("/analyze", json={"files": files})
    assert r.status_code == 200, r.text
    body = r.json()
    by_path = {f["path"]: f for f in body["files"]}
    assert "error" not in by_path["latin1.py"]
    assert by_path["latin1.py"]["sha256"] == hashlib.sha256(latin1).hexdigest()
    assert by_path["broken.py"]["error"].startswith("Cannot lint this file")
    assert "binary" in by_path["blob.py"]["error"]
    codes = {(d["path"], d["code"]) for d in body["diagnostics"]}
    assert {("broken.py", "TL002"), ("blob.py", "TL002"), ("tl101.py", "TL101")} <= codes


def test_nul_and_bom_in_text_content(api):
    r = _post(api, [("nul.py", "x = 1\0\n"), ("bom.py", "\ufeff" + TL101_SRC)])
    assert r.status_code == 200
    by_path = {f["path"]: f for f in r.json()["files"]}
    assert "binary" in by_path["nul.py"]["error"]
    assert "error" not in by_path["bom.py"]
    assert {d["code"] for d in r.json()["diagnostics"] if d["path"] == "bom.py"} == {"TL101"}


def test_the_same_label_twice_gives_two_results(api):
    body = _post(api, [("same.py", TL101_SRC), ("same.py", CLEAN_SRC)]).json()
    assert [f["sha256"] for f in body["files"]] == [hashlib.sha256(s.encode()).hexdigest() for s in (TL101_SRC, CLEAN_SRC)]
    assert [d["code"] for d in body["diagnostics"]] == ["TL101"]


def test_empty_request_is_an_empty_result(api):
    body = api.post("/analyze", json={"files": []}).json()
    assert body["diagnostics"] == [] and body["files"] == [] and body["summary"]["files"] == 0
