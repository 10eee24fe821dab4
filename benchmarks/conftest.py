"""Benchmark suites are collected from ``bench_*.py`` (see ``benchmarks/enforce.py``)."""

from __future__ import annotations

from typing import Any


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "peers: side-by-side runs of other libraries (bench extra)")


def pytest_collection_modifyitems(items: list[Any]) -> None:
    """Run the cases one ratio compares back to back (ours, then each peer, per size).

    pytest's own order runs every size of one library before the next library, so the two sides
    of a ratio were timed minutes apart; on a shared, noisy machine the load can change in
    between and a ratio dips although neither side changed. Side by side, both see the same load.
    """
    groups: dict[tuple[str, str], list[Any]] = {}
    for item in items:
        key = _compared(item)
        if key is not None:
            groups.setdefault(key, []).append(item)
    if not groups:
        return
    ordered: list[Any] = []
    for item in items:
        key = _compared(item)
        if key is None:
            ordered.append(item)
            continue
        group = groups.pop(key, None)
        if group is None:
            continue  # already placed with its group
        cases: dict[tuple[tuple[str, str], ...], int] = {}
        for member in group:
            params = member.callspec.params
            cases.setdefault(_case(params), len(cases))
        ordered.extend(sorted(group, key=lambda member: cases[_case(member.callspec.params)]))
    items[:] = ordered


def _case(params: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """Every parameter but the library: what the compared runs share."""
    return tuple((name, repr(value)) for name, value in params.items() if name != "peer")


def _compared(item: Any) -> tuple[str, str] | None:
    """The suite and test a side-by-side case belongs to (None: not a ``peer`` comparison)."""
    if "peer" not in getattr(getattr(item, "callspec", None), "params", {}):
        return None
    return item.nodeid.split("::")[0], item.originalname
