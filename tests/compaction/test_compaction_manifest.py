"""What each compaction dropped, recorded in its entry: in memory, through every store, in the CLI.

Expected ranges, counts and tokens come from the messages and a fresh manager's own count of
each one; facts from the generator's planted list (``coding_session.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from context_manager import MessageContextManager
from context_manager.cli import main
from context_manager.compaction import (
    CompactionEntry,
    SummaryRequest,
    TokenBudgetCompaction,
    compactions,
    evictions,
    watch,
)
from context_manager.events import Evicted
from context_manager.store import list_compactions
from tests.compaction.coding_session import coding_session
from tests.store.backends import BACKENDS, Backend, make_backend
from tests.store.conftest import postgres_url, redis_url  # noqa: F401  (fixtures the backends use)

POLICY = TokenBudgetCompaction(keep_recent_tokens=600, reserve_tokens=6000)


def forgetful(request: SummaryRequest) -> str:
    return "Worked on the codebase."


def cost(message: dict[str, Any]) -> int:
    return MessageContextManager(max_tokens=100_000, counter="chars").count_message(message)


def test_the_manifest_says_what_was_dropped() -> None:
    messages, planted = coding_session(30)
    manager = MessageContextManager(max_tokens=24_000, counter="chars")
    manager.add({"role": "user", "content": "Pinned: answer in English."}, pinned=True)
    manager.extend(messages)
    entry = manager.compact(forgetful, policy=POLICY)
    manifest = entry.manifest
    cut = entry.first_kept_index
    assert 1 < cut < len(messages)
    gone = messages[: cut - 1]  # history index 0 is the pinned message, which stays
    assert (manifest.first_index, manifest.end_index) == (1, cut)
    assert manifest.messages == len(gone)
    assert manifest.tokens == sum(cost(m) for m in gone)
    texts = {f.text for f in manifest.facts}
    assert "Pinned: answer in English." not in " ".join(texts)
    planted_gone = {p.text for p in planted if p.index < cut - 1}
    assert planted_gone and all(any(p in t for t in texts) for p in planted_gone)
    assert {f.status for f in manifest.facts} == {"readded"}  # the summary kept none
    assert manifest.counts()["readded"] == len(manifest.facts)


def test_statuses_tell_kept_from_readded() -> None:
    messages, planted = coding_session(30)
    manager = MessageContextManager(max_tokens=24_000, counter="chars")
    manager.extend(messages)
    rule = next(p for p in planted if p.kind == "instruction")
    url = next(p for p in planted if p.kind == "url")

    def remembers_one_rule(request: SummaryRequest) -> str:
        return f"The user said: {rule.text}"

    entry = manager.compact(remembers_one_rule, policy=POLICY)
    status = {f.text: f.status for f in entry.manifest.facts}
    assert status[rule.text] == "kept"
    assert status[url.text] == "readded"
    assert entry.summary.count(rule.text) == 1  # not repeated in the facts block


def _compact_twice(manager: MessageContextManager, messages: list[dict[str, Any]]) -> None:
    manager.extend(messages[:60])
    manager.compact(forgetful, policy=POLICY)
    manager.extend(messages[60:])
    manager.compact(forgetful, policy=POLICY)


@pytest.mark.parametrize("scheme", ["jsonl", "sqlite"])
def test_the_manifest_survives_reopen(tmp_path: Path, scheme: str) -> None:
    target = str(tmp_path / "s.jsonl") if scheme == "jsonl" else f"sqlite:///{tmp_path}/s.db"
    messages, _ = coding_session(30)
    manager = MessageContextManager.open(target, max_tokens=24_000, counter="chars")
    _compact_twice(manager, messages)
    before = compactions(manager)
    assert len(before) == 2 and all(e.manifest is not None for e in before)
    assert before[1].manifest.first_index == before[0].first_kept_index
    manager.store.close()

    reopened = MessageContextManager.open(target, max_tokens=24_000, counter="chars")
    assert reopened.compaction == before[-1]
    assert compactions(reopened) == before
    assert list_compactions(target) == before
    assert list_compactions(reopened) == before
    reopened.store.close()


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return make_backend(request, tmp_path)


def test_every_backend_keeps_the_manifest(backend: Backend) -> None:
    messages, _ = coding_session(30)
    manager = backend.manager(max_tokens=24_000, counter="chars")
    _compact_twice(manager, messages)
    before = compactions(manager)
    manager.store.close()
    reopened = backend.manager(max_tokens=24_000, counter="chars")
    try:
        assert compactions(reopened) == before
        assert reopened.compaction.manifest == before[-1].manifest
    finally:
        reopened.store.close()
    listed = list_compactions(backend.target, session="s1", store_options=dict(backend.options))
    assert listed == before


def test_an_in_memory_manager_lists_its_compactions_and_forgets_them_on_clear() -> None:
    messages, _ = coding_session(30)
    manager = MessageContextManager(max_tokens=24_000, counter="chars")
    _compact_twice(manager, messages)
    listed = compactions(manager)
    assert [e.first_kept_index for e in listed] == [
        listed[0].manifest.end_index,
        manager.compaction.first_kept_index,
    ]
    manager.clear()
    assert compactions(manager) == []


def test_an_old_record_without_a_manifest_still_restores() -> None:
    entry = CompactionEntry.from_dict({"summary": "s", "first_kept_index": 3, "tokens_before": 9})
    assert entry.manifest is None
    assert "manifest" not in entry.to_dict()


def test_fifo_evictions_are_listed_once_watched() -> None:
    manager = MessageContextManager(max_tokens=400, reserve_tokens=0, strategy="fifo")
    watch(manager)
    gone: list[tuple[Any, ...]] = []
    manager.subscribe(lambda e: gone.append(e.messages) if isinstance(e, Evicted) else None)
    old = {"role": "user", "content": "You must never touch deploy/prod.yaml, see issue #77."}
    manager.add(old)
    for n in range(20):
        manager.add({"role": "user", "content": f"message {n} " + "x" * 120})
    seen = evictions(manager)
    assert seen and sum(r.messages for r in seen) > 1
    texts = {f.text for r in seen for f in r.facts}
    assert "You must never touch deploy/prod.yaml, see issue #77." in texts
    assert "deploy/prod.yaml" in texts and "issue #77" in texts
    assert [(r.number, r.messages) for r in seen] == [(n, len(g)) for n, g in enumerate(gone, 1)]
    assert seen[0].tokens == sum(MessageContextManager().count_message(m) for m in gone[0])


def test_cli_lists_compactions_as_text_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "s.jsonl"
    messages, _ = coding_session(30)
    manager = MessageContextManager.open(str(path), max_tokens=24_000, counter="chars")
    _compact_twice(manager, messages)
    expected = compactions(manager)
    manager.store.close()

    assert main(["compactions", str(path), "--json"]) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)
    assert [r["number"] for r in rows] == [1, 2]
    assert [r["manifest"]["end_index"] for r in rows] == [e.first_kept_index for e in expected]
    assert "2 compaction(s)" in err

    assert main(["compactions", str(path)]) == 0
    out, _ = capsys.readouterr()
    first = expected[0].manifest
    assert "#1 manual" in out
    assert f"dropped messages {first.first_index}-{first.end_index - 1}" in out
    assert f"{first.messages} messages" in out


def test_cli_refuses_a_missing_session(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compactions", str(tmp_path / "none.jsonl")]) == 2
    assert "no such session" in capsys.readouterr().err
    assert not (tmp_path / "none.jsonl").exists()


def test_cli_says_a_mistyped_session_is_not_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database holding session ``real`` and no ``raal``: ``0 compaction(s)`` for the typo
    would read as "nothing was compacted"; ``sessions delete`` says the same about it."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    manager = MessageContextManager.open(url, session="real", max_tokens=8_000)
    manager.add({"role": "user", "content": "hi"})
    manager.store.close()
    assert main(["compactions", url, "--session", "real"]) == 0
    assert "0 compaction(s)" in capsys.readouterr().err
    assert main(["compactions", url, "--session", "raal"]) == 1
    assert "no session 'raal'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "url", ["postgresql://user:s3cr3t@127.0.0.1:1/db", "redis://:s3cr3t@127.0.0.1:1/0"]
)
def test_cli_errors_never_show_the_password(url: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compactions", url]) == 2
    err = capsys.readouterr().err
    assert err.startswith("context-manager: error: ") and "127.0.0.1" in err
    assert "s3cr3t" not in err
