"""Every test process: no tqdm monitor thread.

torch.compile's inductor makes a progress bar for every compiled graph (disabled by default, but tqdm starts its
monitor thread when any bar is made, disabled or not) and that thread lives until the process ends. The linter forks
its helpers and workers only while the process has a single thread (analyzer/file_pass.pool_context), so a
torch.compile test run earlier in the same pytest process turned the fork tests of tests/cli into spawn runs
that never see their monkeypatched functions."""
from __future__ import annotations

try:
    import tqdm
except ImportError:  # torch.hub falls back to a fake tqdm
    pass
else:
    tqdm.tqdm.monitor_interval = 0  # tqdm's documented switch: no monitor thread
