"""SARIF output: valid against the official 2.1.0 schema, and shaped as GitHub code scanning wants."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import jsonschema
import pytest

from analyzer.diagnostics import Applicability, Diagnostic, Edit, Fix, Severity
from analyzer.report import render
from analyzer.report.sarif import artifact_location

SCHEMA_FILE = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
SCHEMA_SHA256 = "d9ae9a4394e29ad68cea57a3f7ec4ec0f283887edba0c8f8f2999c8903407636"


@pytest.fixture(scope="module")
def validator():
    raw = SCHEMA_FILE.read_bytes()
    assert hashlib.sha256(raw).hexdigest() == SCHEMA_SHA256, "the vendored SARIF schema was modified"
    schema = json.loads(raw)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema)


def diag(code="TL101", path="pkg/model.py", line=2, column=9, end_line=2, end_column=22, fixes=(), severity=Severity.ERROR, origin="static"):
    return Diagnostic(code, "reshape-inplace" if code == "TL101" else "x", severity, f"{code} message", path, line, column, end_line, end_column, origin, tuple(fixes))


FIX = Fix("Make the aliasing explicit", Applicability.UNSAFE, (Edit(2, 11, 2, 18, "view"),))


def test_validator_rejects_a_broken_log(validator):
    # The check can fail: a log without "version" and with a result lacking its message is invalid.
    bad = {"runs": [{"tool": {"driver": {"name": "x"}}, "results": [{"ruleId": "TL101"}]}]}
    assert list(validator.iter_errors(bad))


def test_sarif_validates_against_the_schema(validator, tmp_path):
    ds = [
        diag(fixes=[FIX]),
        diag(code="TL201", line=5, column=1, end_column=4, severity=Severity.WARNING),
        diag(code="TL002", path="bad.py", line=1, column=1, end_column=1),
        diag(code="TL103", origin="trace", severity=Severity.INFO),
        diag(path="dir with space/ü.py"),
    ]
    log = json.loads(render(ds, "sarif", root="."))
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])
    empty = json.loads(render([], "sarif"))
    assert not list(validator.iter_errors(empty))
    assert empty["runs"][0]["results"] == []


def test_sarif_shape_for_code_scanning():
    ds = [diag(fixes=[FIX]), diag(code="TL201", line=5, column=1, end_column=4, severity=Severity.WARNING)]
    log = json.loads(render(ds, "sarif", root="."))
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "thunder-lint" and driver["version"]
    rules = driver["rules"]
    ids = [r["id"] for r in rules]
    assert len(ids) == len(set(ids))
    for res in run["results"]:
        rule = rules[res["ruleIndex"]]
        assert rule["id"] == res["ruleId"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"] == {"uri": "pkg/model.py", "uriBaseId": "%SRCROOT%"}
        assert loc["region"]["startColumn"] >= 1 and loc["region"]["startLine"] >= 1
    first = run["results"][0]
    assert first["locations"][0]["physicalLocation"]["region"] == {"startLine": 2, "startColumn": 9, "endLine": 2, "endColumn": 22}
    assert first["level"] == "error" and run["results"][1]["level"] == "warning"
    repl = first["fixes"][0]["artifactChanges"][0]["replacements"][0]
    assert repl == {"deletedRegion": {"startLine": 2, "startColumn": 11, "endLine": 2, "endColumn": 18}, "insertedContent": {"text": "view"}}
    assert "helpUri" not in json.dumps(log)


def test_sarif_rules_carry_the_rule_docs():
    from rules import RULES

    log = json.loads(render([diag()], "sarif"))
    rules = {r["id"]: r for r in log["runs"][0]["tool"]["driver"]["rules"]}
    assert set(RULES) <= set(rules)  # every known rule is described, found or not
    tl101 = rules["TL101"]
    assert tl101["name"] == RULES["TL101"].name
    assert tl101["shortDescription"]["text"] == RULES["TL101"].summary
    assert tl101["help"]["markdown"] == RULES["TL101"].docs
    assert "What it does" in tl101["help"]["text"]
    assert tl101["fullDescription"]["text"] and "#" not in tl101["fullDescription"]["text"]
    assert tl101["defaultConfiguration"]["level"] in ("error", "warning", "note")


def test_uris_are_relative_to_root_and_absolute_outside_it(tmp_path):
    inside = tmp_path / "src" / "a b.py"
    assert artifact_location(str(inside), str(tmp_path)) == {"uri": "src/a%20b.py", "uriBaseId": "%SRCROOT%"}
    outside = artifact_location(str(tmp_path / "x.py"), str(tmp_path / "src"))
    assert outside["uri"].startswith("file:///") and "uriBaseId" not in outside


def test_sarif_is_byte_identical_for_the_same_input():
    ds = [diag(fixes=[FIX]), diag(code="TL201", line=5)]
    assert render(ds, "sarif", root=os.getcwd()) == render(list(reversed(ds)), "sarif", root=os.getcwd())
