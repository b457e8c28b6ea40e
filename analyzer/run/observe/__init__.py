"""`thunder-lint run --observe [--verify]`: what the program's own torch.compile did, at the program's lines.

    hooks.py     the backend wrapper (at torch._dynamo.optimize, so torch.compile's options apply untouched) and
                 the compile callbacks
    observer.py  what a run saw: graphs and their calls, torch's graph-break and compilation-metrics records
    verify.py    --verify: each graph call run again eagerly and compared; the first differing FX node
    where.py     torch's stacks and guard reasons -> the user's file and line, the guard in words
    findings.py  sites -> TL401/TL402/TL403 Diagnostics, the static rules' predictions, precision and recall
    session.py   the `run --observe` command's body and report
"""
from __future__ import annotations

from .hooks import observing
from .observer import Observer

__all__ = ["Observer", "observing"]
