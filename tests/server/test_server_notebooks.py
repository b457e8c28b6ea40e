"""A notebook sent to POST /analyze is linted as the CLI lints it: its code cells, findings at their cell, fixes
returned as the notebook's JSON, a compile call in it seen by the project index of the request."""

from __future__ import annotations

import json

NB = json.dumps({
    "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": ["# notes\n"]},
        {"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [],
         "source": ["import torch\n", "%matplotlib inline\n", "def step(x):\n", "    flat = x.reshape(-1)\n",
                    "    flat.add_(1)\n", "    return x"]},
    ],
    "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5,
}, indent=1) + "\n"


def test_a_notebook_is_linted_cell_by_cell_and_fixed_as_json(api):
    r = api.post("/analyze", json={"files": [{"path": "nb.ipynb", "content": NB}], "select": ["TL101"]})
    assert r.status_code == 200, r.text
    (d,) = r.json()["diagnostics"]
    assert (d["cell"], d["line"], d["column"]) == (2, 5, 5)
    sarif = api.post("/analyze?format=sarif", json={"files": [{"path": "nb.ipynb", "content": NB}], "select": ["TL101"]})
    assert json.loads(sarif.text)["runs"][0]["results"][0]["properties"]["cell"] == 2

    fixed = api.post("/analyze", json={"files": [{"path": "nb.ipynb", "content": NB}], "select": ["TL101"],
                                       "fix": True, "unsafe_fixes": True}).json()
    cells = json.loads(fixed["files"][0]["fixed_content"])["cells"]
    assert cells[1]["source"][3] == "    flat = x.view(-1)\n" and cells[1]["source"][1] == "%matplotlib inline\n"


def test_a_notebook_that_is_not_json_is_a_file_error(api):
    r = api.post("/analyze", json={"files": [{"path": "nb.ipynb", "content": "{nope"}]})
    assert r.status_code == 200 and "not a valid Jupyter notebook" in r.json()["files"][0]["error"]
