"""Benchmark suites are collected from ``bench_*.py`` (see ``benchmarks/enforce.py``)."""

from __future__ import annotations

from typing import Any


def pytest_configure(config: Any) -> None:
    config.addinivalue_line("markers", "peers: side-by-side runs of other libraries (bench extra)")
