"""POST /analyze with the trace findings of a real `thunder-lint run --format json`: merged with the static
findings of the submitted sources, in every format; bad trace JSON is a 422 naming the reason. The server
never runs the code: the run happens here, in the test."""
from __future__ import annotations

import json

import pytest

SCRIPT = '''\
import torch

state = {"scale": 2.0}


@torch.compile
def step(x):
    return x * state["scale"]


@torch.compile
def gate(x):
    return x + 1 if x.sum() > 0 else x - 1  # noqa: TL302


for _ in range(3):
    step(torch.ones(2))
    gate(torch.ones(2))
'''


@pytest.fixture(scope="module")
def trace_json(tmp_path_factory):
    import os

    from analyzer.cli import main

    folder = tmp_path_factory.mktemp("run")
    (folder / "prog.py").write_text(SCRIPT)
    here = os.getcwd()
    os.chdir(folder)
    try:
        status = main(["run", "--format", "json", "--no-with-static", "-o", "trace.json", "prog.py"])
    finally:
        os.chdir(here)
    assert status == 1
    return json.loads((folder / "trace.json").read_text())


def _post(api, trace, fmt=None, **options):
    body = {"files": [{"path": "prog.py", "content": SCRIPT}], "trace": trace, **options}
    return api.post("/analyze", json=body, params={"format": fmt} if fmt else None)


def test_trace_findings_are_merged_with_the_static_ones(api, trace_json):
    # The run reports TL201 and TL302; its own report already dropped the `# noqa: TL302` one.
    assert {(d["code"], d["line"], d["calls"]) for d in trace_json} == {("TL201", 8, 3)}
    gate = dict(trace_json[0], code="TL302", name="data-dependent-control-flow", line=13)  # as an older run wrote
    r = _post(api, trace_json + [gate])
    assert r.status_code == 200, r.text
    body = r.json()
    got = [(d["code"], d["line"], d["origin"], d.get("calls")) for d in body["diagnostics"]]
    assert ("TL201", 8, "trace", 3) in got and ("TL201", 8, "static", None) in got
    assert not any(d["code"] == "TL302" for d in body["diagnostics"])  # the file's `# noqa` applies to both origins
    assert body["summary"]["diagnostics"] == len(got) and body["summary"]["by_code"]["TL201"] == 2
    alone = _post(api, None).json()["diagnostics"]
    assert [d for d in body["diagnostics"] if d["origin"] == "static"] == alone  # static part unchanged

    sarif = _post(api, trace_json, fmt="sarif").json()
    results = sarif["runs"][0]["results"]
    assert {(r["ruleId"], r.get("properties", {}).get("origin", "static")) for r in results} >= \
        {("TL201", "trace"), ("TL201", "static")}
    assert [r["properties"]["calls"] for r in results if r.get("properties", {}).get("origin") == "trace"] == [3]
    github = _post(api, trace_json, fmt="github").text
    assert github.count("TL201") == 2

    ignored = _post(api, trace_json, ignore=["TL201"]).json()["diagnostics"]
    assert not any(d["code"] == "TL201" for d in ignored)
    elsewhere = _post(api, [dict(trace_json[0], path="lib/other.py")]).json()["diagnostics"]
    assert ("lib/other.py", "trace", 3) in {(d["path"], d["origin"], d.get("calls")) for d in elsewhere}


@pytest.mark.parametrize("bad, field", [
    ("not a list", "trace"),
    ([{"code": "TL201"}], "trace[0]"),
    ([{"origin": "static"}], "trace[0].origin"),
    ([{"code": "TL999"}], "trace[0].code"),
    ([{"line": 0}], "trace[0].line"),
    ([{"path": ""}], "trace[0].path"),
    ([{"calls": -1}], "trace[0].calls"),
])
def test_bad_trace_json_is_a_422_with_the_reason(api, trace_json, bad, field):
    if isinstance(bad, list) and len(bad[0]) == 1 and "code" not in bad[0] or bad == [{"code": "TL999"}]:
        bad = [dict(trace_json[0], **bad[0])]
    r = _post(api, bad)
    assert r.status_code == 422, r.text
    error = r.json()
    assert error["code"] == "invalid_request" and error["detail"]
    assert any(f["field"].startswith(field) for f in error["fields"]), error
