"""Exact Python reproductions of TypeScript behaviour, proven by ``compat_fixtures/``."""
