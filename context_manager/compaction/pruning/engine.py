"""The stateful pruning engine behind ``ToolResultPruning.bind()``.

Incremental by construction: new messages are scanned once (by stable ``seq``), every decision
moves a monotone pointer (results become old, get trimmed, get cleared, in order, never back), a
pruned copy is built and counted once and cached, and the pruned prefix sums are patched from
the first changed group only. So a request costs O(log n) plus what changed since the last one,
not a recount of the history, and a pruned result is byte-identical on every later request
(provider prompt caches keep hitting).
"""

from __future__ import annotations

from bisect import bisect_left
from copy import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..._js import utf16_len
from ...budget.pruned import PrunePlan
from ...messages import normalize
from .cache_aware import CacheAge, clear_need, sent_saving, worth_of
from .report import PruningReport
from .rewrite import rewrite_message, trimmed_chars

if TYPE_CHECKING:
    from ...budget._ledger import Ledger
    from ...counting import TokenCounter
    from .config import ToolResultPruning

_INTACT, _SOFT, _CLEARED = 0, 1, 2
#: The state a clear that does not pay for itself is rolled back to.
_UNDONE = ("_saved_total", "_saved", "_repl", "_aged_chars", "_delta", "_res_saved")


@dataclass(slots=True)
class _Result:
    seq: int
    call_id: str
    name: str
    chars: int
    images: int
    eligible: bool
    state: int = _INTACT
    trimmed: int = -1  # chars once trimmed, as the trim renders it (-1: not sized yet)


class PruningEngine:
    """Per-conversation pruning state; ``plan()`` is called once per request."""

    def __init__(self, config: ToolResultPruning) -> None:
        self.config = config
        self.reset()

    def reset(self) -> None:
        self._ledger_id = 0
        self._next_seq = 0
        self._results: list[_Result] = []
        self._result_seqs: list[int] = []
        self._assistants: list[int] = []
        self._thinking: list[int] = []
        self._last_caller = -1  # seq of the last assistant turn that calls tools
        self._last_user = -1  # seq of the latest user turn
        self._call_name: dict[str, str] = {}
        self._call_owner: dict[str, int] = {}
        self._first_user: int | None = None
        self._aged = 0
        self._soft_upto = 0
        self._clear_upto = 0
        self._thinking_upto = 0
        self._thinking_done: set[int] = set()
        self._counts = [0, 0, 0, 0]  # trimmed, cleared, images cleared, images kept
        self._floor_seq = 0
        self._aged_chars = 0  # chars of old, eligible, not-cleared results (post soft trim)
        self._repl: dict[int, Any] = {}
        self._saved: dict[int, int] = {}  # seq -> tokens saved
        self._saved_total = 0
        self._delta: dict[int, int] = {}  # seq -> saving not yet folded into _group_saved
        self._by_msg: dict[int, list[_Result]] = {}
        self._inputs_cleared: dict[int, set[str]] = {}
        self._skipped = 0
        self._n_inputs = 0
        self._cum: list[int] = [0]
        self._group_saved: dict[int, int] = {}
        self._known_groups = 0
        #: ``ledger.cum[-1]`` when the sums were last patched: the last group may grow (a tool
        #: result joins its call) without a new group, and its pruned sum must follow.
        self._known_sum = 0
        self._since = 0  # first group whose pruned sum the last patch may have changed
        self._age_of_cache = CacheAge(self.config.clock)  # config.cache: is it cold?
        self._cold = True
        # section caps (config.caps): tokens of the held result messages, and their savings
        self._msg_tokens: dict[int, int] = {}
        self._res_tokens = 0
        self._res_saved = 0
        self._gone = 0
        self.last_report = PruningReport()

    # -- scanning --------------------------------------------------------------------------
    def _scan(self, ledger: Ledger) -> None:
        seqs, records = ledger.seq, ledger.records
        cfg = self.config
        for i in range(bisect_left(seqs, self._next_seq), len(seqs)):
            rec, seq = records[i], seqs[i]
            if rec.role == "assistant":
                self._assistants.append(seq)
                if rec.thinking:
                    self._thinking.append(seq)
                if rec.tool_calls:
                    self._last_caller = seq
                for call in rec.tool_calls:
                    self._call_name[call.id] = call.name
                    self._call_owner[call.id] = seq
            elif rec.is_user_turn:
                self._last_user = seq
                if self._first_user is None:
                    self._first_user = seq
            if not rec.result_ids:
                continue
            protected = cfg.protect_before_first_user and self._first_user is None
            for k, (call_id, text, _) in enumerate(rec.results):
                images = len(rec.images) if k == 0 else 0
                name = self._call_name.get(call_id, rec.name or "")
                result = _Result(
                    seq,
                    call_id,
                    name,
                    utf16_len(text) + images * cfg.image_chars,
                    images,
                    not protected and cfg.prunable(name),
                )
                self._results.append(result)
                self._result_seqs.append(seq)
                self._by_msg.setdefault(seq, []).append(result)
            if seq not in self._msg_tokens:
                self._msg_tokens[seq] = ledger.tokens[i]
                self._res_tokens += ledger.tokens[i]
        if seqs:
            self._next_seq = seqs[-1] + 1

    def _age(self) -> None:
        """Move the 'old' pointer: results outside the protected tail."""
        cfg = self.config
        if cfg.keep_unit == "tool_uses":
            aged = max(len(self._results) - cfg.keep_last, 0)
        else:
            if cfg.keep_last == 0:
                aged = len(self._results)
            elif len(self._assistants) < cfg.keep_last:
                aged = 0  # fewer assistant turns than protected: nothing is old yet
            else:
                cutoff = self._assistants[-cfg.keep_last]
                aged = bisect_left(self._result_seqs, cutoff)
        for r in self._results[self._aged : aged]:
            if r.eligible:
                self._aged_chars += r.chars
        self._aged = max(self._aged, aged)

    def _thinking_floor(self) -> int:
        """The first seq whose reasoning is never cleared: the current turn (after the latest
        user turn) and the last turn that calls tools keep theirs, as providers require of
        signed reasoning (Anthropic: the last tool-calling turn starts with its thinking)."""
        floors = [s for s in (self._last_caller, self._last_user) if s >= 0]
        return min(floors) if floors else self._next_seq

    # -- rewriting -------------------------------------------------------------------------
    def _rebuild(
        self,
        seq: int,
        ledger: Ledger,
        counter: TokenCounter,
        dirty: set[int],
        lengths: dict[str, int] | None = None,
    ) -> bool:
        """Rewrite message ``seq`` from the state of its results (its reasoning, its call
        inputs) and send the rewrite only if it costs fewer tokens under ``counter`` than what
        is sent for it now (the original or an earlier rewrite): the one rule by which a pruned
        result is never longer, whatever it is replaced by (placeholder, trim, offload stub).
        False: not taken, nothing counted, the caller rolls back the state it changed.
        ``lengths``: filled with the chars each rewritten result is sent as."""
        i = bisect_left(ledger.seq, seq)
        if i >= len(ledger.seq) or ledger.seq[i] != seq:
            return True  # no longer held (compacted away)
        original = ledger.originals[i]
        if original is None:
            return True  # evicted: nothing to rewrite
        results = self._by_msg.get(seq) or []
        cleared = frozenset(r.call_id for r in results if r.state == _CLEARED)
        soft = frozenset(r.call_id for r in results if r.state == _SOFT)
        done = frozenset(() if results else self._inputs_cleared.get(seq, ()))
        thinking = not results and seq in self._thinking_done
        sent = ledger.tokens[i] - self._saved.get(seq, 0)
        if results and self.config.offload is not None:  # sized first: nothing stored
            probe = rewrite_message(self.config, original, cleared, soft, thinking, done, False)
            if probe is not original and counter.count_message(normalize(probe)) >= sent:
                return False
        new = rewrite_message(self.config, original, cleared, soft, thinking, done, True, lengths)
        if new is original:
            if results:
                self._skipped += 1
            return True
        cost = counter.count_message(normalize(new))
        if cost >= sent:
            return False
        saved = ledger.tokens[i] - cost
        change = saved - self._saved.get(seq, 0)
        if results:
            self._res_saved += change
        self._delta[seq] = self._delta.get(seq, 0) + change
        self._saved_total += change
        self._saved[seq] = saved
        self._repl[seq] = new
        dirty.add(seq)
        return True

    # -- prefix sums -----------------------------------------------------------------------
    def _patch_cum(self, ledger: Ledger, changed: set[int]) -> list[int]:
        cum = ledger.cum
        groups = len(ledger.group_start)
        if id(ledger) != self._ledger_id or groups < self._known_groups:
            self._ledger_id = id(ledger)
            self._group_saved = {}
            for seq, saved in self._saved.items():
                g = ledger.group_of_seq(seq)
                if g < groups:
                    self._group_saved[g] = self._group_saved.get(g, 0) + saved
            start = 0
            self._cum = [0]
        else:
            start = max(self._known_groups - 1, 0)  # the last group may have grown
            for seq, delta in self._delta.items():
                g = ledger.group_of_seq(seq)
                start = min(start, g)
                self._group_saved[g] = self._group_saved.get(g, 0) + delta
        self._delta = {}
        self._known_sum = cum[-1]
        self._since = start
        if not self._saved:
            self._known_groups = groups
            self._cum = cum
            return cum
        pcum = self._cum if self._cum is not cum else list(cum)
        del pcum[start + 1 :]
        pinned = ledger.group_pinned
        gs = self._group_saved
        for g in range(start, groups):
            step = cum[g + 1] - cum[g]
            pcum.append(pcum[g] + step - (0 if pinned[g] else gs.get(g, 0)))
        self._cum = pcum
        self._known_groups = groups
        return pcum

    # -- the request -----------------------------------------------------------------------
    def plan(
        self, ledger: Ledger, counter: TokenCounter, window: int, fixed: int, budget: int = 0
    ) -> PrunePlan:
        """``budget``: what the context may send (0: the window), for cache-aware clearing."""
        cfg = self.config
        budget = budget or window
        self._scan(ledger)
        self._forget_evicted(ledger)
        self._age()
        if cfg.cache is not None:
            self._cold = self._age_of_cache.cold(cfg.cache, self._next_seq)
        dirty: set[int] = set()
        held = ledger.total + fixed - self._saved_total
        new_trimmed = new_cleared = 0
        at_least_skip = False
        gate = cfg.soft_ratio is None or held >= cfg.soft_ratio * window
        if cfg.trigger_tokens is not None and cfg.soft_ratio is None:
            gate = held >= cfg.trigger_tokens or self._clear_upto > 0
        if cfg.clear_thinking_keep is not None:
            upto = min(
                max(len(self._thinking) - cfg.clear_thinking_keep, 0),
                bisect_left(self._thinking, self._thinking_floor()),
            )
            for seq in self._thinking[self._thinking_upto : upto]:
                self._thinking_done.add(seq)
                if not self._rebuild(seq, ledger, counter, dirty):
                    self._thinking_done.discard(seq)  # stripping it would not be cheaper
            self._thinking_upto = max(self._thinking_upto, upto)
        if (
            cfg.max_chars is not None
            and gate
            and self._soft_upto < self._aged
            and self._soft_pays(ledger, held, budget)
        ):
            touched: dict[int, list[_Result]] = {}
            for r in self._results[self._soft_upto : self._aged]:
                if (
                    r.eligible
                    and r.state == _INTACT
                    and (
                        r.chars - r.images * cfg.image_chars > cfg.max_chars
                        or (r.images and cfg.images == "clear")
                    )
                ):
                    r.state = _SOFT
                    touched.setdefault(r.seq, []).append(r)
            self._soft_upto = self._aged
            before = self._saved_total
            for seq in sorted(touched):
                lengths: dict[str, int] = {}
                if not self._rebuild(seq, ledger, counter, dirty, lengths):
                    for r in touched[seq]:  # the trim would not be cheaper: sent as it is
                        r.state = _INTACT
                    continue
                for r in touched[seq]:
                    self._count(_SOFT, 1, r)
                    new_trimmed += 1
                    if r.call_id in lengths:
                        kept = r.images * cfg.image_chars if cfg.images == "keep" else 0
                        old, r.chars = r.chars, lengths[r.call_id] + kept
                        self._aged_chars += r.chars - old
            held -= self._saved_total - before
        if cfg.hard_clear and self._clear_upto < self._aged:  # the gate holds all but caps
            by_ratio = (
                gate
                and cfg.hard_ratio is not None
                and held >= cfg.hard_ratio * window
                and self._aged_chars >= cfg.min_prunable_chars
            )
            by_tokens = gate and cfg.trigger_tokens is not None and held >= cfg.trigger_tokens
            cap = cfg.caps.results_cap(window) if cfg.caps is not None else None
            by_cap = cap is not None and self._res_tokens - self._res_saved > cap
            if by_ratio or by_tokens or by_cap:
                new_cleared, at_least_skip = self._clear(
                    ledger, counter, window, held, dirty, by_ratio or by_tokens, budget
                )
        if (
            dirty
            or id(ledger) != self._ledger_id
            or len(ledger.group_start) != self._known_groups
            or ledger.cum[-1] != self._known_sum  # the last group grew (or was pinned)
        ):
            cum = self._patch_cum(ledger, dirty)
            since = self._since
        else:
            cum = self._cum if self._saved else ledger.cum
            since = len(cum) - 1  # no group's sum changed since the last plan
        report = self._report(new_trimmed, new_cleared, at_least_skip)
        self.last_report = report
        return PrunePlan(self._repl, cum, self._saved_total, report, since)

    def _forget_evicted(self, ledger: Ledger) -> None:
        """Drop savings of messages evicted (FIFO, compaction) so usage is not under-counted."""
        floor = ledger.floor
        below = ledger.group_start[floor] if floor < len(ledger.group_start) else None
        first = ledger.next_seq if below is None else ledger.seq[below]
        if first <= self._floor_seq:
            return
        self._floor_seq = first
        held = set(ledger.seq[:below])
        for seq in [s for s in self._saved if s < first and s not in held]:
            if seq in self._msg_tokens:
                self._res_saved -= self._saved[seq]
            self._saved_total -= self._saved.pop(seq)
            self._repl.pop(seq, None)
        results = self._results
        while self._gone < len(results) and results[self._gone].seq < first:
            seq = results[self._gone].seq
            self._gone += 1
            if seq not in held and seq in self._msg_tokens:
                self._res_tokens -= self._msg_tokens.pop(seq)
        self._ledger_id = 0  # group numbering may have changed: rebuild the sums once

    def _trimmed_chars(self, ledger: Ledger, r: _Result) -> int:
        """Chars ``r`` would be sent as once trimmed, from the renderer that trims it (an
        offload stub sized with a sample handle, nothing stored): the planner's estimate of a
        trim before it is built. Sized once per result."""
        if r.trimmed < 0:
            cfg = self.config
            text_chars = trimmed_chars(cfg, ledger, r.seq, r.call_id)
            if text_chars is None:  # no longer held
                text_chars = r.chars - r.images * cfg.image_chars
            r.trimmed = text_chars + (r.images * cfg.image_chars if cfg.images == "keep" else 0)
        return r.trimmed

    def _worthwhile(
        self, ledger: Ledger, held: int, budget: int, soft: bool = False
    ) -> tuple[int, int]:
        """(the fewest sent tokens a clear (``soft``: the pending soft trims) must save to pay
        for the cache it breaks, the most it could save): see ``cache_aware``; the first changed
        position is the oldest result it rewrites. A trim's saving is estimated from the chars of
        the trim as its renderer builds it."""
        cfg = self.config
        if cfg.cache is None or self._cold:
            return 0, 0
        if held > budget:  # cut: even every result held may not bring it under (O(1) check)
            need = clear_need(cfg.cache, cfg.payback_requests, held, budget, 0)
            if sent_saving(held, budget, self._res_tokens - self._res_saved) < need:
                return need, 0
        pending: dict[int, float] = {}  # seq -> share of the message's tokens it may save
        for r in self._results[self._soft_upto if soft else self._clear_upto : self._aged]:
            if soft and r.eligible and r.state == _INTACT:
                total = sum(x.chars for x in self._by_msg[r.seq]) or 1
                cut = r.chars - self._trimmed_chars(ledger, r)
                if cut > 0 or (r.images and cfg.images == "clear"):
                    pending[r.seq] = pending.get(r.seq, 0.0) + max(cut, 0) / total
            elif not soft and r.eligible and r.state != _CLEARED:
                pending[r.seq] = 1.0
        end = self._age_of_cache.previous_history
        return worth_of(
            cfg.cache, cfg.payback_requests, ledger, held, budget, pending, self._saved, end
        )

    def _soft_pays(self, ledger: Ledger, held: int, budget: int) -> bool:
        """Whether the pending soft trims pay for the cache they break (else they wait)."""
        need, most = self._worthwhile(ledger, held, budget, soft=True)
        return not need or most >= need

    def _clear(
        self,
        ledger: Ledger,
        counter: TokenCounter,
        window: int,
        held: int,
        dirty: set[int],
        by_ratio: bool,
        budget: int,
    ) -> tuple[int, bool]:
        """Clear old results oldest-first; all or nothing against ``clear_at_least`` and, with
        ``cache``, against the saving that pays for the cache it breaks. ``by_ratio``: a ratio or
        token trigger fired (else only the results cap did)."""
        cfg = self.config
        cap = cfg.caps.results_cap(window) if cfg.caps is not None else None
        need, most = 0, 0
        if cap is None or self._res_tokens - self._res_saved <= cap:  # a cap beats the cost
            need, most = self._worthwhile(ledger, held, budget)
        if need and most < need:
            return 0, True  # cannot pay for itself: nothing is built
        start_held, start_saved = held, self._saved_total
        undo = cfg.clear_at_least > 0 or need > 0
        snapshot = {name: copy(getattr(self, name)) for name in _UNDONE} if undo else {}
        changed: list[tuple[_Result, int]] = []  # each result cleared, and its state before
        owners: set[int] = set()
        added: dict[int, set[str]] = {}  # call inputs cleared by this pass, by owner
        pos = self._clear_upto
        while pos < self._aged:
            below = cfg.hard_ratio is not None and held < cfg.hard_ratio * window
            ratio_done = not by_ratio or (cfg.clear_until == "below_ratio" and below)
            cap_done = cap is None or self._res_tokens - self._res_saved <= cap
            paid = not need or sent_saving(start_held, budget, start_held - held) >= need
            if ratio_done and cap_done and paid:
                break
            r = self._results[pos]
            pos += 1
            if not r.eligible or r.state == _CLEARED:
                continue
            prev, r.state = r.state, _CLEARED
            before = self._saved_total
            if not self._rebuild(r.seq, ledger, counter, dirty):
                r.state = prev  # its placeholder or stub would not be cheaper: sent as it is
                continue
            changed.append((r, prev))
            self._count(prev, -1, r)
            self._count(_CLEARED, 1, r)
            self._aged_chars -= r.chars
            if cfg.clear_tool_inputs and r.call_id in self._call_owner:
                owner = self._call_owner[r.call_id]
                added.setdefault(owner, set()).add(r.call_id)
                self._inputs_cleared.setdefault(owner, set()).add(r.call_id)
                self._n_inputs += 1
                owners.add(owner)
            held -= self._saved_total - before
        freed = self._saved_total - start_saved
        short = freed < cfg.clear_at_least
        if undo and changed and (short or sent_saving(start_held, budget, freed) < need):
            for r, prev in changed:
                self._count(_CLEARED, -1, r)
                self._count(prev, 1, r)
                r.state = prev
            for name, value in snapshot.items():
                setattr(self, name, value)
            gone = {r.call_id for r, _ in changed}
            for owner in owners:
                ids = self._inputs_cleared.get(owner, set())
                self._n_inputs -= len(ids & gone)
                ids -= gone
            dirty.update(r.seq for r, _ in changed)
            return 0, True
        self._clear_upto = pos
        for owner in sorted(owners):
            if not self._rebuild(owner, ledger, counter, dirty):
                self._inputs_cleared[owner] -= added[owner]  # not cheaper: kept as they were
                self._n_inputs -= len(added[owner])
        return len(changed), False

    def _count(self, state: int, sign: int, r: _Result) -> None:
        counts = self._counts
        if state == _SOFT:
            counts[0] += sign
        elif state == _CLEARED:
            counts[1] += sign
        if state != _INTACT and r.images:
            keep = self.config.images == "keep" and state == _SOFT
            counts[3 if keep else 2] += sign * r.images

    def _report(self, new_trimmed: int, new_cleared: int, skipped: bool) -> PruningReport:
        trimmed, cleared, img_cleared, img_kept = self._counts
        return PruningReport(
            results_trimmed=trimmed,
            results_cleared=cleared,
            inputs_cleared=self._n_inputs,
            thinking_cleared=len(self._thinking_done),
            images_cleared=img_cleared,
            images_kept=img_kept,
            tokens_freed=self._saved_total,
            new_trimmed=new_trimmed,
            new_cleared=new_cleared,
            skipped_unsupported=self._skipped,
            clear_skipped_below_at_least=skipped,
        )
