"""Hypothesis profiles, and the ``property`` marker on every Hypothesis test.

The README's test command runs ``dev`` (100 examples), locally and in CI alike, so it stays under
ten minutes on 2 cores. ``.ci/run`` then searches longer, as steps of their own: every property
test with ``ci`` (500 examples), and the suites that compare the library with its naive oracles
with ``thorough`` (2,000). Tests that set ``max_examples`` themselves keep their own count in
every profile.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

for name, examples in (("ci", 500), ("thorough", 2000)):
    settings.register_profile(
        name,
        max_examples=examples,
        deadline=None,
        derandomize=False,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
settings.register_profile(
    "dev",
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each Hypothesis test ``property`` (``-m property`` selects them all)."""
    for item in items:
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            item.add_marker(pytest.mark.property)
