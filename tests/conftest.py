"""Hypothesis profiles: a quick run locally (``dev``, 100 examples), 500 examples in CI
(``CI=true``), and ``thorough`` (2,000), which ``.ci/run`` uses for the property suites that
compare the library with its naive oracles, as a step after the README's command: that
command stays under ten minutes on 2 cores, and the long search still runs on every change.

Tests that set ``max_examples`` themselves keep their own count in every profile.
"""

from __future__ import annotations

import os

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
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
