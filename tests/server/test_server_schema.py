"""/openapi.json: request and response models are in it, and a bounded schemathesis run against the
live server finds no 5xx, no undocumented status and no response that breaks its own schema."""

from __future__ import annotations

import pytest
from server_helpers import LIMITS, TOKEN, ServerProcess


def test_openapi_has_request_and_response_models(api):
    schema = api.get("/openapi.json").json()
    components = schema["components"]["schemas"]
    for model in ("AnalyzeRequest", "SourceFile", "AnalyzeResponse", "DiagnosticOut", "FileResultOut", "SummaryOut",
                  "ErrorResponse", "RuleOut", "RuleDocsOut", "HealthOut", "VersionOut"):
        assert model in components, model
    analyze = schema["paths"]["/analyze"]["post"]
    assert analyze["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/AnalyzeRequest")
    assert analyze["responses"]["200"]["content"]["application/json"]["schema"]["$ref"].endswith("/AnalyzeResponse")
    for status in ("401", "413", "422", "503", "504"):
        # errors are RFC 9457 problems
        assert analyze["responses"][status]["content"]["application/problem+json"]["schema"]["$ref"].endswith("/ErrorResponse")
    assert {p["name"] for p in analyze["parameters"]} == {"format"}
    assert set(components["AnalyzeRequest"]["properties"]) == {"files", "select", "ignore", "extend_select", "fix", "unsafe_fixes", "assume_compiled", "target", "trace"}
    assert components["AnalyzeRequest"]["additionalProperties"] is False
    assert components["AnalyzeRequest"]["properties"]["files"]["maxItems"] == LIMITS["max_files"]
    assert "TL101" in components["AnalyzeRequest"]["properties"]["select"]["anyOf"][0]["items"]["enum"]
    assert {"/rules", "/rules/{code}", "/healthz", "/livez", "/readyz", "/metrics", "/version"} <= set(schema["paths"])


def test_schemathesis_against_the_live_server(authed_server):
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, Phase, given, settings

    auth = {"Authorization": f"Bearer {TOKEN}"}
    schema = schemathesis.openapi.from_url(f"{authed_server.url}/openapi.json", headers=auth)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 8
    calls = []
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=25, deadline=None, database=None, derandomize=True,
            phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
        )
        def check(case):
            response = case.call_and_validate(headers=auth, timeout=30)
            calls.append((case.operation.label, response.status_code))

        check()
    assert {label for label, _ in calls} == {op.label for op in operations}
    assert all(status < 500 for _, status in calls)


@pytest.fixture(scope="module")
def open_server():
    """No auth: negative cases then violate the body or the query, never just a missing token."""
    server = ServerProcess("--workers", "1", "--max-files", "8")
    yield server
    server.stop()


def test_schemathesis_schema_violations_are_refused(open_server):
    schemathesis = pytest.importorskip("schemathesis")
    from hypothesis import HealthCheck, Phase, given, settings
    from schemathesis.generation import GenerationMode

    schema = schemathesis.openapi.from_url(f"{open_server.url}/openapi.json")
    analyze = next(r.ok() for r in schema.get_all_operations() if r.ok().label == "POST /analyze")
    refused = []

    @given(case=analyze.as_strategy(generation_mode=GenerationMode.NEGATIVE))
    @settings(
        max_examples=40, deadline=None, database=None, derandomize=True,
        phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck),
    )
    def check(case):
        response = case.call_and_validate(timeout=30)  # fails on a 5xx or an accepted invalid request
        refused.append(response.status_code)

    check()
    assert refused and all(400 <= status < 500 for status in refused), refused
