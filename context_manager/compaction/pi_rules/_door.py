"""The door of the Pi rules: a value that is not Pi's shape is a typed error, not a TypeError.

The rules are ports of Pi's TypeScript and read Pi's camelCase JSON as it is (``msg["role"]``,
``usage.get(...)``); checking every field of every shape again in Python would be a second copy
of what the rules already read. So the package's public functions are wrapped once here: what
a value that is not Pi's shape makes a rule raise (``TypeError``, ``AttributeError``,
``KeyError``, ``IndexError``, ``ValueError``, ``RecursionError``) becomes
``InvalidMessageError`` naming the function, with the original chained. The library's own
callers use the same functions.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from ...errors import ContextManagerError, InvalidMessageError

__all__ = ["door"]

P = ParamSpec("P")
R = TypeVar("R")

_SHAPE_ERRORS = (TypeError, AttributeError, KeyError, IndexError, ValueError, RecursionError)


def door(rule: Callable[P, R]) -> Callable[P, R]:
    """``rule`` raising only typed errors (see the module docstring)."""

    @functools.wraps(rule)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return rule(*args, **kwargs)
        except ContextManagerError:
            raise
        except _SHAPE_ERRORS as exc:
            what = f"{type(exc).__name__}: {exc}"[:200]
            raise InvalidMessageError(
                f"{rule.__name__}: an argument is not Pi's session shape ({what})",
                hint="pass Pi's own JSON (messages, entries, usage) as Pi writes it",
            ) from exc

    return checked
