"""Interop a user calls: LangChain-identical ``trim_messages`` and Pi session files.

These reproduce other projects' observable behaviour; the fixtures in ``compat_fixtures/`` prove
them (see :mod:`context_manager.parity`).
"""

from __future__ import annotations

from .langchain import count_tokens_approximately, trim_messages
from .pi_sessions import read_pi_session

__all__ = ["count_tokens_approximately", "read_pi_session", "trim_messages"]
