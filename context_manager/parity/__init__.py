"""Fixture runners and ``verify``: prove our Python equals the TypeScript it replaces.

Runtime code never imports this package; ``context-manager verify DIR`` (for users' CI) and the
test suite do.
"""
