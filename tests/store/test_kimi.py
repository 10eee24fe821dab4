"""Interop with Kimi CLI 1.52's own ``Context`` class, via fixtures it wrote and dumps it produced.

The fixtures come from ``compat_fixtures/kimi/make_fixtures.py`` (run under Python 3.13 with
kimi-cli installed); these tests need neither.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from context_manager.store import JsonlLog, RestoredLog

KIMI_DIR = Path(__file__).resolve().parents[2] / "compat_fixtures" / "kimi"
sys.path.insert(0, str(KIMI_DIR))
from kimi_scenarios import COMMON, OURS_ONLY, log_files, run_ours  # noqa: E402

ALL = {**COMMON, **OURS_ONLY}


def state(restored: RestoredLog) -> dict[str, Any]:
    """Our restore, in the shape of the Kimi dumps."""
    return {
        "history": [m.message for m in restored.messages],
        "token_count": restored.token_count,
        "n_checkpoints": restored.n_checkpoints,
        "system_prompt": restored.system_prompt,
    }


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def test_fixtures_exist() -> None:
    assert sorted(p.name for p in (KIMI_DIR / "kimi_written").iterdir()) == sorted(COMMON)
    assert sorted(p.name for p in (KIMI_DIR / "ours_written").iterdir()) == sorted(ALL)


@pytest.mark.parametrize("name", sorted(COMMON))
def test_kimi_written_file_restores_identically(name: str, tmp_path: Path) -> None:
    source = KIMI_DIR / "kimi_written" / name
    shutil.copyfile(source / "context.jsonl", tmp_path / "context.jsonl")
    restored = JsonlLog(tmp_path / "context.jsonl").restore()
    assert state(restored) == load(source / "kimi_restore.json")
    assert restored.skipped_lines == []


@pytest.mark.parametrize("name", sorted(COMMON))
def test_same_operations_write_the_same_bytes_as_kimi(name: str, tmp_path: Path) -> None:
    """Every file Kimi wrote (rotated ones included) is byte-identical to ours for the same ops."""
    run_ours(COMMON[name], tmp_path)
    kimi_files = log_files(KIMI_DIR / "kimi_written" / name)
    assert log_files(tmp_path) == kimi_files
    assert len(kimi_files) >= 1


@pytest.mark.parametrize("name", sorted(ALL))
def test_our_file_restores_identically_in_kimi(name: str, tmp_path: Path) -> None:
    fixture = KIMI_DIR / "ours_written" / name
    run_ours(ALL[name], tmp_path)
    # The committed file is what Kimi restored; prove we still write exactly that file.
    assert log_files(tmp_path) == log_files(fixture)
    restored = JsonlLog(tmp_path / "context.jsonl").restore()
    assert state(restored) == load(fixture / "kimi_restore.json")


def _revert_cases() -> list[tuple[str, int]]:
    cases = []
    for name in sorted(ALL):
        for dump in sorted((KIMI_DIR / "ours_written" / name).glob("kimi_revert_*.json")):
            cases.append((name, int(dump.stem.rsplit("_", 1)[1])))
    return cases


REVERT_CASES = _revert_cases()


def test_revert_cases_cover_every_checkpoint() -> None:
    for name in ALL:
        n = load(KIMI_DIR / "ours_written" / name / "kimi_restore.json")["n_checkpoints"]
        assert sorted(c for s, c in REVERT_CASES if s == name) == list(range(n))
    assert len(REVERT_CASES) == 9


@pytest.mark.parametrize(("name", "checkpoint_id"), REVERT_CASES)
def test_our_revert_matches_kimi_revert(name: str, checkpoint_id: int, tmp_path: Path) -> None:
    fixture = KIMI_DIR / "ours_written" / name
    expected = load(fixture / f"kimi_revert_{checkpoint_id}.json")
    shutil.copyfile(fixture / "context.jsonl", tmp_path / "context.jsonl")
    log = JsonlLog(tmp_path / "context.jsonl")
    log.restore()
    reverted = log.revert_to(checkpoint_id)
    assert state(reverted) == {k: v for k, v in expected.items() if k != "file"}
    assert state(log.restore()) == state(reverted)
    ours = (tmp_path / "context.jsonl").read_text(encoding="utf-8")
    # Kimi drops lines it cannot model (our _compaction record); otherwise files are identical.
    kept = [line for line in ours.splitlines(True) if not line.startswith('{"role":"_compaction"')]
    assert "".join(kept) == expected["file"]
    assert (tmp_path / "context_1.jsonl").read_bytes() == (fixture / "context.jsonl").read_bytes()


def test_compaction_line_survives_our_revert_but_not_kimis(tmp_path: Path) -> None:
    fixture = KIMI_DIR / "ours_written" / "our_attributes_and_compaction"
    shutil.copyfile(fixture / "context.jsonl", tmp_path / "context.jsonl")
    log = JsonlLog(tmp_path / "context.jsonl")
    assert log.restore().compaction is not None
    reverted = log.revert_to(1)
    assert reverted.compaction is not None
    assert reverted.compaction["first_kept_index"] == 1
    assert reverted.messages_before_compaction == 3
    assert "_compaction" not in load(fixture / "kimi_revert_1.json")["file"]


def test_damaged_kimi_file_restores_like_kimi(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    fixture = KIMI_DIR / "damaged"
    shutil.copyfile(fixture / "context.jsonl", tmp_path / "context.jsonl")
    restored = JsonlLog(tmp_path / "context.jsonl").restore()
    assert state(restored) == load(fixture / "kimi_restore.json")
    assert restored.skipped_lines == [4, 7]
    assert restored.torn_tail
    for needle in ("corrupt line 4", "corrupt line 7", "torn last line 13"):
        assert needle in caplog.text


def test_kimi_limits_explain_our_content_rule(tmp_path: Path) -> None:
    """Kimi aborts on a line without "content" (TypeError) and on unknown content parts
    (KeyError); our store writes "content" on every line and reads all of them."""
    limits = load(KIMI_DIR / "kimi_limits.json")
    outcome = {name: v.get("exception", v["outcome"]) for name, v in limits.items()}
    assert outcome == {
        "message_without_content": "TypeError",
        "metadata_without_content": "TypeError",
        "metadata_with_null_content": "restored",
        "anthropic_tool_use_block": "KeyError",
        "openai_input_text_part": "KeyError",
        "image_url_part": "restored",
    }
    path = tmp_path / "context.jsonl"
    with JsonlLog(path) as log:
        log.append_message(limits["message_without_content"]["record"])
        log.append_compaction({"summary": "s"})
    assert all('"content"' in line for line in path.read_text().splitlines())
    for name in ("anthropic_tool_use_block", "openai_input_text_part", "image_url_part"):
        other = tmp_path / f"{name}.jsonl"
        other.write_text(json.dumps(limits[name]["record"]) + "\n")
        assert len(JsonlLog(other, strict=True).restore().messages) == 1
