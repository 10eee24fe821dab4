"""Deterministic conversations for every benchmark suite (seeded; same seed, same bytes).

A coding-agent session in OpenAI chat shape: a system prompt, then turns of a user message
(English, sometimes Chinese/Japanese, sometimes emoji), assistant prose with code blocks, and tool
groups of one to three *parallel* calls followed by their results (source files, JSON, shell
output). Lengths are spread log-uniformly so a few messages are long, as in real sessions.

Every text is built afresh with ``join`` so no two messages share a string object: memory
measurements then see what a caller who parsed the messages from JSON would hold, and token
caches (tiktoken's LRU) see distinct texts.

``conversation(n)`` is the first ``n`` messages (moved back to a group boundary) of one long
seeded session, so 1k/10k/100k histories are prefixes of each other and are generated once.
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

Message = dict[str, Any]

SEED = 20240601

_WORDS_TEXT = (
    "the a an of to in for on with by from as at into over after before under between "
    "function value result error file path request response buffer token budget context "
    "message model user assistant tool call query index cache memory thread lock queue "
    "parse render compile build test deploy commit branch merge review config option "
    "returns raises keeps drops counts reads writes sends waits retries fails passes "
    "quickly carefully again only never always still already because although while "
    "small large empty full stale fresh exact rough first last next previous latest "
    "we you it they this that these those here there why how what which when where "
    "should could would might must can will does did has have is are was were be been "
    "fix bug patch issue test suite check case edge limit window slice prefix suffix "
    "number string list dict tuple object class method module package import export"
)
WORDS = _WORDS_TEXT.split()

CJK = (
    "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过"
    "子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体"
    "制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内"
    "数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提"
    "直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计"
    "別対応関係確認設定変更処理実行完了失敗成功開始終了読込書出検索結果"
)

EMOJI = ("😀", "🎉", "🚀", "🧪", "✅", "❌", "🔥", "👍", "🤖", "📦", "🐍", "💡", "⚠️", "🙏")

_IDENTIFIERS_TEXT = (
    "manager budget ledger counter tokens message records cursor offset window start stop "
    "result payload items values keys total limit count size path name handle"
)
IDENTIFIERS = _IDENTIFIERS_TEXT.split()

CODE_LINES = (
    "def {a}({b}, {c}=None):",
    "    return {a}({b}) + {c}",
    "    if {b} is None:",
    "        raise ValueError(f'bad {b}: {{{b}!r}}')",
    "for {a} in {b}.{c}():",
    "    {a}[{b}] = {c}.get({b}, 0) + 1",
    "const {a} = await {b}.{c}({{ limit: 10 }});",
    "{a} = [{b} for {b} in {c} if {b}]",
    "    # keep {a} in step with {b}",
    "class {A}({B}):",
    "    {a}: list[int] = field(default_factory=list)",
    "print(json.dumps({a}, indent=2))",
)

TOOLS = ("read_file", "run_shell", "search_code", "http_get", "list_dir", "edit_file")


class _Streams:
    """Long random streams sliced at random offsets: fast, and still seeded end to end.

    Drawing every word with ``rng.choices`` made 100k messages take ~10 s; slicing pre-drawn
    streams takes a fraction of that and still yields distinct texts (offsets are random).
    """

    def __init__(self, rng: random.Random, size: int) -> None:
        self.rng = rng
        self.size = size
        self.words = rng.choices(WORDS, k=size)
        self.cjk = "".join(rng.choices(CJK, k=size))
        lines = []
        for _ in range(size // 16):
            a, b, c = rng.choices(IDENTIFIERS, k=3)
            lines.append(
                rng.choice(CODE_LINES).format(a=a, b=b, c=c, A=a.capitalize(), B=b.capitalize())
            )
        self.code = lines

    def _offset(self, size: int, k: int) -> int:
        return int(self.rng.random() * (size - k))

    def words_text(self, n_chars: int) -> str:
        """English-like prose of about ``n_chars`` characters."""
        k = min(max(1, n_chars // 6), self.size - 1)
        o = self._offset(self.size, k)
        text = " ".join(self.words[o : o + k])
        return text[:1].upper() + text[1:] + "."

    def cjk_text(self, n_chars: int) -> str:
        k = min(max(1, n_chars), self.size - 1)
        o = self._offset(self.size, k)
        return self.cjk[o : o + k] + "。"

    def code_text(self, n_chars: int) -> str:
        k = min(max(1, n_chars // 28), len(self.code) - 1)
        o = self._offset(len(self.code), k)
        return "\n".join(self.code[o : o + k])

    def mixed_text(self, n_chars: int) -> str:
        """About ``n_chars`` characters of prose, with CJK, emoji and code blocks mixed in."""
        rng = self.rng
        parts: list[str] = []
        size = 0
        while size < n_chars:
            chunk = min(n_chars - size, rng.randint(40, 400))
            roll = rng.random()
            if roll < 0.6:
                part = self.words_text(chunk)
            elif roll < 0.75:
                part = self.cjk_text(max(1, chunk // 2))
            elif roll < 0.85:
                part = " ".join(rng.choices(EMOJI, k=rng.randint(1, 3)))
            else:
                part = "```python\n" + self.code_text(chunk) + "\n```"
            parts.append(part)
            size += len(part) + 1
        return "\n".join(parts)


def _length(rng: random.Random, lo: int, hi: int) -> int:
    """Log-uniform length in ``[lo, hi]``: mostly short, sometimes long."""
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))


def _user(s: _Streams) -> Message:
    rng = s.rng
    roll = rng.random()
    n = _length(rng, 20, 600)
    if roll < 0.15:
        text = s.cjk_text(max(4, n // 3))
    elif roll < 0.25:
        text = s.words_text(n) + " " + rng.choice(EMOJI)
    else:
        text = s.words_text(n)
    return {"role": "user", "content": text}


def _assistant(s: _Streams) -> Message:
    return {"role": "assistant", "content": s.mixed_text(_length(s.rng, 60, 3000))}


def _tool_output(s: _Streams, tool: str) -> str:
    rng = s.rng
    n = _length(rng, 40, 5000)
    if tool in ("read_file", "edit_file"):
        return s.code_text(n)
    if tool == "http_get":
        items = [
            {"id": rng.randint(1, 10**6), "title": s.words_text(40), "tags": rng.sample(WORDS, 3)}
            for _ in range(max(1, n // 120))
        ]
        return json.dumps({"status": 200, "items": items}, ensure_ascii=False)
    if tool == "search_code":
        return "\n".join(
            f"src/{rng.choice(IDENTIFIERS)}.py:{rng.randint(1, 900)}: {s.code_text(30)}"
            for _ in range(max(1, n // 60))
        )
    return s.mixed_text(n)


def _tool_group(s: _Streams, group: int) -> list[Message]:
    rng = s.rng
    k = rng.choices((1, 2, 3), weights=(6, 3, 1))[0]
    calls: list[Message] = []
    tools: list[str] = []
    for j in range(k):
        tool = rng.choice(TOOLS)
        tools.append(tool)
        args = {
            "path": f"src/{rng.choice(IDENTIFIERS)}/{rng.choice(IDENTIFIERS)}.py",
            "query": s.words_text(rng.randint(10, 80)),
        }
        calls.append(
            {
                "id": f"call_{group}_{j}",
                "type": "function",
                "function": {"name": tool, "arguments": json.dumps(args, ensure_ascii=False)},
            }
        )
    lead = s.words_text(rng.randint(20, 160)) if rng.random() < 0.3 else None
    out: list[Message] = [{"role": "assistant", "content": lead, "tool_calls": calls}]
    for call, tool in zip(calls, tools, strict=True):
        out.append({"role": "tool", "tool_call_id": call["id"], "content": _tool_output(s, tool)})
    return out


def system_prompt() -> Message:
    return {"role": "system", "content": "You are a careful coding agent. " * 12}


def iter_groups(seed: int = SEED, chars: int = 1 << 30) -> Iterator[list[Message]]:
    """Endless protocol-valid groups: user turns, assistant prose, tool groups.

    ``chars`` (a hint of how much text will be drawn) only sizes the random streams.
    """
    s = _streams(seed, chars)
    rng = s.rng
    group = 0
    while True:
        yield [_user(s)]
        for _ in range(rng.choices((0, 1, 2, 3), weights=(1, 3, 3, 1))[0]):
            group += 1
            if rng.random() < 0.6:
                yield _tool_group(s, group)
            else:
                yield [_assistant(s)]
        if rng.random() < 0.8:
            yield [_assistant(s)]


def generate(n: int, seed: int = SEED) -> list[Message]:
    """A fresh list of ``n`` messages or fewer (system prompt first, whole groups only)."""
    out = [system_prompt()]
    for group in iter_groups(seed, chars=n * 800):
        if len(out) + len(group) > n:
            break
        out.extend(group)
    return out


@lru_cache(maxsize=4)
def _long(n: int, seed: int) -> tuple[Message, ...]:
    return tuple(generate(n, seed))


def conversation(n: int, seed: int = SEED) -> list[Message]:
    """The first ``n`` messages (or fewer, whole groups) of the long session for ``seed``.

    Shares the message objects of a cached 100k-message session when ``n`` fits in it, so the
    suites generate it once per process. Callers must not mutate the dicts.
    """
    base = _long(max(n, 100_000), seed)
    end = min(n, len(base))
    while end < len(base) and base[end]["role"] == "tool":
        end -= 1  # never cut inside a tool group
    return list(base[:end])


def priorities(messages: list[Message], seed: int = SEED) -> list[int]:
    """Per-message priorities for the priority strategy: users high, tool output low."""
    rng = random.Random(seed + 1)
    out = []
    for m in messages:
        if m["role"] == "user":
            out.append(2)
        elif m["role"] == "tool":
            out.append(rng.choice((0, 0, 1)))
        else:
            out.append(rng.choice((0, 1, 1)))
    return out


def _streams(seed: int, chars: int) -> _Streams:
    """Fresh streams for ``seed``, sized for about ``chars`` characters of output.

    Small corpora get small streams (drawing 2^18 words costs ~0.3 s); output depends only on
    the arguments.
    """
    size = min(1 << 18, max(1 << 13, 1 << max(chars // 4, 1).bit_length()))
    return _Streams(random.Random(seed), size)


def mixed_text(n_chars: int, seed: int = SEED) -> str:
    """One text of about ``n_chars`` mixed characters."""
    return _streams(seed, n_chars).mixed_text(n_chars)


def text_pool(n_chars: int, count: int, seed: int = SEED) -> list[Message]:
    """``count`` distinct plain messages, alternating user/assistant (protocol-valid in order).

    Each text starts with its number, so no two are equal and a token cache never hits.
    """
    s = _streams(seed + n_chars, n_chars * count)
    return [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"[{i}] " + s.mixed_text(n_chars - 8),
        }
        for i in range(count)
    ]


def random_conversations(count: int, seed: int = SEED) -> Iterator[list[Message]]:
    """``count`` short sessions of random length (for the orphaned-result comparison)."""
    rng = random.Random(seed + 7)
    for i in range(count):
        yield generate(rng.randint(20, 300), seed=seed * 1000 + i)


def utf8_size(messages: list[Message]) -> int:
    """Bytes of the messages as compact UTF-8 JSON (what the caller would parse or send)."""
    return sum(
        len(json.dumps(m, separators=(",", ":"), ensure_ascii=False).encode()) for m in messages
    )


def text_utf8_size(messages: list[Message]) -> int:
    """Bytes of the texts alone (content, tool-call names and arguments), UTF-8."""
    total = 0
    for m in messages:
        content = m.get("content")
        if isinstance(content, str):
            total += len(content.encode())
        for call in m.get("tool_calls") or ():
            fn = call["function"]
            total += len(fn["name"].encode()) + len(fn["arguments"].encode())
    return total
