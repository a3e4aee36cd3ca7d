"""Hypothesis's settings profiles (a pytest plugin, loaded before any test module builds its `@settings`):
`ci`, the default, derives each property test's examples from the test itself, so every run of the suite tries
the same cases and a red run is red again on any machine; `explore` draws them from the seed that
`--hypothesis-seed` gives (`make explore` prints it), to look for new failures on purpose."""

from __future__ import annotations

from hypothesis import settings

# Failures found while exploring are not replayed from a local database: a derandomized run tries what the
# test's own digest gives, and an exploring one what its printed seed gives, so either reproduces anywhere.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", derandomize=False, database=None, print_blob=True)
settings.load_profile("ci")  # `--hypothesis-profile explore` loads the other one
