"""After every test of the compiler suite: no traced proxy may be left reachable from the test module's state
(its globals, and through them closure cells, function defaults and attributes, objects, modules, containers)."""
from __future__ import annotations

import pytest

from proxy_sweep import proxies_reachable


@pytest.fixture(autouse=True)
def _no_proxy_left_in_user_state(request):
    yield
    module = getattr(request, "module", None)
    if module is None:
        return
    found = proxies_reachable([vars(module)])
    assert not found, f"a traced proxy was left in user state after the test: {found[:3]}"
