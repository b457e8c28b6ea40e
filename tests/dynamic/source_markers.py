"""Line numbers of marked lines, so the dynamic tests' expected lines survive edits above them."""


def marker_line(path: str, marker: str) -> int:
    """The line of `path` holding `marker` in a trailing comment (`# <marker>`); exactly one must."""
    with open(path, encoding="utf-8") as f:
        hits = [i for i, text in enumerate(f, 1) if text.rstrip().endswith("# " + marker)]
    assert len(hits) == 1, marker
    return hits[0]
