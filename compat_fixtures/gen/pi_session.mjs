// Fixtures for Pi's session transcripts (@mariozechner/pi-coding-agent 0.73.1).
//
// Seeded session files (JSONL: a header, then entries with id/parentId forming a tree) are
// generated with branches, compactions, branch summaries, custom messages, model and thinking
// level changes, labels, session info, malformed lines, old (v1/v2) formats and odd timestamps.
// Each file is written to a temp dir and loaded by the REAL `SessionManager.open(file)`; the
// expected value is its `buildSessionContext()` (the current leaf), or, for cases with an
// explicit `leafId`, the exported `buildSessionContext(sessionManager.getEntries(), leafId)`.
// Suite: pi.buildSessionContext  input {jsonl, leafId?}  expected {messages, thinkingLevel, model}
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildSessionContext, SessionManager } from "@mariozechner/pi-coding-agent";
import { makeRng } from "../lib/rng.mjs";

const PACKAGE = "@mariozechner/pi-coding-agent@0.73.1";
const SEED = 6_2026_1121;
const RANDOM_CASES = 600;

const WORDS = ["read", "the", "file", "ünï", "✓", "😀", "fix", "bug", "tests", "\"q\"", "a\nb", "x"];
const words = (rng, lo, hi) =>
  Array.from({ length: rng.int(lo, hi) }, () => rng.pick(WORDS)).join(" ");

const BASE_MS = Date.UTC(2026, 0, 5, 9, 30, 0, 0);

function timestamp(rng, i) {
  const ms = BASE_MS + i * 61_123 + rng.int(0, 999);
  const r = rng.next();
  if (r < 0.86) return new Date(ms).toISOString();
  if (r < 0.89) return new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");
  if (r < 0.92) return new Date(ms).toISOString().replace("Z", "+02:00");
  if (r < 0.94) return new Date(ms).toISOString().slice(0, 10);
  if (r < 0.96) return "not a date";
  if (r < 0.98) return ms;
  return undefined;
}

function textContent(rng) {
  if (rng.chance(0.5)) return words(rng, 1, 8);
  const parts = [{ type: "text", text: words(rng, 1, 6) }];
  if (rng.chance(0.3)) parts.push({ type: "image", data: "aGk=", mimeType: "image/png" });
  if (rng.chance(0.4)) parts.push({ type: "text", text: words(rng, 1, 4) });
  return parts;
}

function message(rng, i, models) {
  const r = rng.next();
  const ts = BASE_MS + i * 1000;
  if (r < 0.35) return { role: "user", content: textContent(rng), timestamp: ts };
  if (r < 0.7) {
    const content = [];
    if (rng.chance(0.3)) content.push({ type: "thinking", thinking: words(rng, 1, 5) });
    content.push({ type: "text", text: words(rng, 0, 8) });
    if (rng.chance(0.4)) {
      content.push({ type: "toolCall", id: `call_${i}`, name: rng.pick(["read", "bash"]),
        arguments: { path: words(rng, 1, 2) } });
    }
    const msg = { role: "assistant", content, api: "openai-completions", stopReason: "stop",
      usage: { input: rng.int(0, 5000), output: rng.int(0, 500), cacheRead: 0, cacheWrite: 0,
        totalTokens: 0 },
      timestamp: ts };
    if (!rng.chance(0.1)) {
      const [provider, model] = rng.pick(models);
      msg.provider = provider;
      msg.model = model;
    }
    return msg;
  }
  if (r < 0.85) {
    return { role: "toolResult", toolCallId: `call_${i - 1}`, toolName: "read",
      content: [{ type: "text", text: words(rng, 1, 10) }], isError: rng.chance(0.2),
      timestamp: ts };
  }
  if (r < 0.93) {
    return { role: "bashExecution", command: words(rng, 1, 3), output: words(rng, 0, 6),
      exitCode: rng.int(0, 2), cancelled: false, truncated: false, timestamp: ts,
      ...(rng.chance(0.3) ? { excludeFromContext: true } : {}) };
  }
  return { role: "custom", customType: "note", content: textContent(rng), display: true,
    timestamp: ts };
}

const MODELS = [["anthropic", "claude-sonnet-4"], ["openai", "gpt-4o"], ["google", "gemini-2.5"]];

/** Build one session file: returns {lines, entries} (entries = parsed non-header entries). */
function makeSession(rng, caseIndex) {
  const version = rng.chance(0.9) ? 3 : 2;
  const header = { type: "session", version, id: `sess-${caseIndex}`,
    timestamp: new Date(BASE_MS).toISOString(), cwd: "/work/project" };
  const entries = [];
  const onPath = []; // ids on the current branch, root first
  let leaf = null;
  let nextId = 0;
  const newId = () => {
    nextId += 1;
    return (caseIndex * 7919 + nextId * 104729).toString(16).padStart(8, "0").slice(-8);
  };
  const push = (entry) => {
    const full = { ...entry, id: newId(), parentId: leaf, timestamp: timestamp(rng, entries.length) };
    if (full.timestamp === undefined) delete full.timestamp;
    entries.push(full);
    leaf = full.id;
    onPath.push(full.id);
    return full;
  };
  const length = rng.int(0, rng.chance(0.15) ? 50 : 20);
  for (let i = 0; i < length; i++) {
    const r = rng.next();
    if (r < 0.55) {
      const msg = message(rng, i, MODELS);
      if (version === 2 && msg.role === "custom" && rng.chance(0.7)) msg.role = "hookMessage";
      push({ type: "message", message: msg });
    } else if (r < 0.62) {
      const kept = onPath.length && rng.chance(0.9) ? rng.pick(onPath)
        : rng.pick(["missing1", entries.length ? rng.pick(entries).id : "missing2"]);
      const entry = { type: "compaction", summary: `## Goal\n${words(rng, 1, 6)}`,
        firstKeptEntryId: kept, tokensBefore: rng.int(0, 200_000),
        details: { readFiles: ["a.ts"], modifiedFiles: [] } };
      if (rng.chance(0.2)) entry.fromHook = true;
      push(entry);
    } else if (r < 0.7 && entries.length) {
      // Branch: move the leaf to an earlier entry (or the root), maybe with a summary.
      const target = rng.chance(0.1) ? null : rng.pick(entries).id;
      leaf = target;
      onPath.length = 0;
      let cur = target;
      const byId = new Map(entries.map((e) => [e.id, e]));
      while (cur) {
        onPath.unshift(cur);
        cur = byId.get(cur)?.parentId ?? null;
      }
      if (rng.chance(0.6)) {
        const summary = rng.chance(0.15) ? "" : `branch summary: ${words(rng, 1, 6)}`;
        const entry = { type: "branch_summary", fromId: target ?? "root", summary };
        if (rng.chance(0.3)) entry.details = { files: 1 };
        push(entry);
      }
    } else if (r < 0.76) {
      const entry = { type: "custom_message", customType: rng.pick(["memo", "hook"]),
        content: textContent(rng), display: rng.chance(0.5) };
      if (rng.chance(0.4)) entry.details = { k: rng.int(0, 9) };
      push(entry);
    } else if (r < 0.82) {
      const [provider, modelId] = rng.pick(MODELS);
      push({ type: "model_change", provider, modelId });
    } else if (r < 0.88) {
      push({ type: "thinking_level_change", thinkingLevel: rng.pick(["low", "medium", "high"]) });
    } else if (r < 0.92) {
      push({ type: "custom", customType: "state", data: { n: i } });
    } else if (r < 0.96 && entries.length) {
      push({ type: "label", targetId: rng.pick(entries).id, label: rng.pick(["mark", undefined]) });
    } else {
      push({ type: "session_info", name: words(rng, 1, 3) });
    }
  }
  const lines = [JSON.stringify(header), ...entries.map((e) => JSON.stringify(e))];
  if (rng.chance(0.1) && lines.length > 2) lines.splice(rng.int(1, lines.length - 1), 0, "{broken");
  if (rng.chance(0.05)) lines.splice(rng.int(1, lines.length), 0, "   ");
  return { lines, entries };
}

function linearV1(rng, caseIndex) {
  // Version 1: no ids; compaction points at a kept entry by index into the file's entries.
  const header = { type: "session", id: `v1-${caseIndex}`, timestamp: new Date(BASE_MS).toISOString(),
    cwd: "/w" };
  const entries = [];
  const n = rng.int(1, 14);
  for (let i = 0; i < n; i++) {
    if (i > 2 && rng.chance(0.2)) {
      entries.push({ type: "compaction", timestamp: new Date(BASE_MS + i).toISOString(),
        summary: `v1 summary ${i}`, firstKeptEntryIndex: rng.int(0, i + 1), tokensBefore: i * 100 });
    } else {
      entries.push({ type: "message", timestamp: new Date(BASE_MS + i).toISOString(),
        message: message(rng, i, MODELS) });
    }
  }
  return [JSON.stringify(header), ...entries.map((e) => JSON.stringify(e))];
}

function expectedFor(dir, name, input) {
  const file = join(dir, `${name}.jsonl`);
  writeFileSync(file, input.jsonl);
  const sm = SessionManager.open(file, dir);
  const ctx = "leafId" in input
    ? buildSessionContext(sm.getEntries(), input.leafId)
    : sm.buildSessionContext();
  return JSON.parse(JSON.stringify(ctx));
}

export async function generate(outDir, writeSuite) {
  const rng = makeRng(SEED);
  const dir = mkdtempSync(join(tmpdir(), "pi-session-"));
  const cases = [];
  const add = (id, input) => cases.push({ id, input, expected: expectedFor(dir, id, input) });
  try {
    add("empty-file", { jsonl: "" });
    add("header-only", { jsonl: `${JSON.stringify({ type: "session", version: 3, id: "h", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/" })}\n` });
    add("no-header", { jsonl: '{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}\n' });
    add("crlf-and-blank", { jsonl: '{"type":"session","version":3,"id":"s","timestamp":"t","cwd":"/"}\r\n\r\n{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":"user","content":"hi","timestamp":1}}\r\n' });
    for (let i = 0; i < RANDOM_CASES; i++) {
      const { lines, entries } = makeSession(rng, i);
      const input = { jsonl: lines.join("\n") + (rng.chance(0.9) ? "\n" : "") };
      add(`session-${i}`, input);
      if (entries.length && rng.chance(0.35)) {
        const r = rng.next();
        const leafId = r < 0.8 ? rng.pick(entries).id : r < 0.9 ? null : "no-such-entry";
        add(`session-${i}-leaf`, { jsonl: input.jsonl, leafId });
      }
    }
    for (let i = 0; i < 60; i++) add(`v1-${i}`, { jsonl: linearV1(rng, i).join("\n") + "\n" });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  writeSuite({
    suite: "pi.buildSessionContext",
    package: PACKAGE,
    function: "SessionManager.open(file).buildSessionContext() / buildSessionContext(entries, leafId)",
    seed: SEED,
    cases,
  });
}
