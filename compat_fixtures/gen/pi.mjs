// Parity fixtures for Pi's compaction helpers (@mariozechner/pi-coding-agent, @mariozechner/pi-ai).
//
// Builds seeded, varied inputs in Pi's own JSON shapes (session entries and agent messages with
// parallel tool calls, images, emoji / CJK / combining marks, bash executions, custom messages,
// branch and compaction summaries, long tool results, thinking blocks) and records what the REAL
// Pi functions return for them. The Python side (context_manager/compaction/pi_rules/) must reproduce
// every expected value exactly. Deterministic: one fixed seed per suite, no clocks.
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { makeRng as rngFrom } from "../lib/rng.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const modulesDir = join(here, "..", "node_modules", "@mariozechner");
const readPkg = (name) => JSON.parse(readFileSync(join(modulesDir, name, "package.json"), "utf8"));
const agentPkg = readPkg("pi-coding-agent");
const aiPkg = readPkg("pi-ai");
const AGENT = `${agentPkg.name}@${agentPkg.version}`;
const AI = `${aiPkg.name}@${aiPkg.version}`;

// ---------------------------------------------------------------------------------------------

// Pieces of text chosen to stress UTF-16 lengths, JSON escaping and regexes.
const WORDS = [
  "the", "file", "src/main.ts", "refactor", "function", "error", "test", "passes", "npm", "run",
  "build", "context", "window", "token", "summary", "TODO", "fix", "import", "const", "return",
];
const SPICE = [
  "😀", "👍🏽", "👨‍👩‍👧‍👦", "🇯🇵", "漢字", "日本語のテキスト", "한국어", "e\u0301", "Z\u0351\u036b\u0343",
  "\u200b", "ß", "İ", "ſ", "\u212a", "\u2028", "\t", "\n", "\r\n", '"quoted"', "back\\slash",
  "\u0001", "\u001f", "\u007f", "！", "\uff21", "\ue000", "\ufffd", "𝔘𝔫𝔦", "Ωμέγα", "مرحبا",
  "<tag>", "{\"json\":1}", "   ", "\u00a0",
];

function words(r, targetLen) {
  let out = "";
  while (out.length < targetLen) {
    out += r.chance(0.18) ? r.pick(SPICE) : r.pick(WORDS);
    out += r.chance(0.85) ? " " : r.pick(["\n", ".", ", ", ""]);
  }
  return out;
}

/** Text of a varied length; `scale` stretches the typical size. */
function text(r, scale = 1) {
  const roll = r.next();
  if (roll < 0.05) return "";
  if (roll < 0.55) return words(r, r.int(1, 40 * scale));
  if (roll < 0.93) return words(r, r.int(40, 240 * scale));
  return words(r, r.int(240, 900 * scale));
}

let stamp = 0;
const nextStamp = () => 1767225600000 + 1000 * stamp++;

function argValue(r, depth = 0) {
  const roll = r.int(0, depth > 1 ? 6 : 9);
  switch (roll) {
    case 0: return words(r, r.int(0, 30));
    case 1: return r.int(-5, 100000);
    case 2: return r.pick([0.5, -2.25, 1e-7, 1.5e-9, 1e21, 3.14159, 1e16, 123456789.125, 0.000001]);
    case 3: return r.chance(0.5);
    case 4: return null;
    case 5: return `/home/user/${r.pick(["a.ts", "b 😀.md", "漢字.py", "dir/c.json"])}`;
    case 6: return r.pick(["", "\u2028", "\"", "\\", "\u0000"]);
    case 7: return [argValue(r, depth + 1), argValue(r, depth + 1)];
    case 8: return { [r.pick(["k", "10", "2", "é"])]: argValue(r, depth + 1), z: argValue(r, depth + 1) };
    default: return words(r, r.int(0, 80));
  }
}

const TOOL_NAMES = ["read", "write", "edit", "bash", "grep", "ls", "find", "web_search"];

function toolArgs(r, name) {
  const args = {};
  if (["read", "write", "edit"].includes(name) || r.chance(0.2)) {
    args.path = r.pick([
      "src/index.ts", "README.md", "docs/😀.md", "漢字/file.py", "./a.txt", "", "src/index.ts",
      "ｆｕｌｌ.txt", "\ue000.bin", "Zed.md", "a/b/c.json", 42,
    ]);
  }
  if (name === "bash") args.command = r.pick(["ls -la", "npm test", "echo \"hi 😀\"", "grep -rn foo ."]);
  if (name === "write") args.content = words(r, r.int(0, 120));
  if (name === "edit") {
    args.oldText = words(r, r.int(1, 40));
    args.newText = words(r, r.int(0, 40));
  }
  const extra = r.int(0, 2);
  for (let i = 0; i < extra; i++) args[r.pick(["limit", "offset", "flags", "10", "2", "opts", "ünï"])] = argValue(r);
  return args;
}

function usage(r) {
  const input = r.int(0, 200000);
  const output = r.int(0, 8000);
  const cacheRead = r.chance(0.5) ? r.int(0, 100000) : 0;
  const cacheWrite = r.chance(0.3) ? r.int(0, 5000) : 0;
  const u = { input, output, cacheRead, cacheWrite };
  const roll = r.next();
  if (roll < 0.6) u.totalTokens = input + output + cacheRead + cacheWrite;
  else if (roll < 0.8) u.totalTokens = 0;
  else if (roll < 0.9) u.totalTokens = r.int(1, 300000);
  if (r.chance(0.2)) u.cost = { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.0125 };
  return u;
}

function image(r) {
  return { type: "image", data: r.pick(["iVBORw0KGgo=", "R0lGODlh"]), mimeType: r.pick(["image/png", "image/gif"]) };
}

function userMessage(r, scale) {
  const m = { role: "user" };
  if (r.chance(0.45)) m.content = text(r, scale);
  else {
    m.content = [];
    const n = r.int(0, 3);
    for (let i = 0; i < n; i++) {
      if (r.chance(0.2)) m.content.push(image(r));
      else m.content.push({ type: "text", text: text(r, scale) });
    }
  }
  m.timestamp = nextStamp();
  return m;
}

function assistantMessage(r, scale, { lean = false, usageChance = 0 } = {}) {
  const content = [];
  if (r.chance(0.3)) {
    const block = { type: "thinking", thinking: text(r, scale) };
    if (r.chance(0.3)) block.thinkingSignature = "sig";
    content.push(block);
  }
  if (r.chance(0.75)) content.push({ type: "text", text: text(r, scale) });
  const calls = r.chance(0.45) ? r.int(1, r.chance(0.3) ? 4 : 1) : 0; // parallel calls too
  for (let i = 0; i < calls; i++) {
    const name = r.pick(TOOL_NAMES);
    content.push({ type: "toolCall", id: `call_${stamp}_${i}`, name, arguments: toolArgs(r, name) });
  }
  if (r.chance(0.1)) content.push({ type: "text", text: text(r, scale) });
  const m = { role: "assistant", content };
  if (lean) {
    if (r.chance(usageChance)) m.usage = usage(r);
    m.stopReason = calls > 0 ? "toolUse" : r.pick(["stop", "stop", "error", "aborted"]);
    return m; // only what the cut-point rules read, to keep fixture files small
  }
  if (!lean) {
    m.api = "anthropic-messages";
    m.provider = r.pick(["anthropic", "openai", "google"]);
    m.model = r.pick(["claude-sonnet-4-5", "gpt-5", "gemini-2.5-pro"]);
    m.usage = usage(r);
  }
  m.stopReason = calls > 0 ? "toolUse" : r.pick(["stop", "stop", "length", "error", "aborted"]);
  if (m.stopReason === "error") m.errorMessage = r.pick(["prompt is too long: 213462 tokens > 200000 maximum", "boom"]);
  m.timestamp = nextStamp();
  return m;
}

function toolResultMessage(r, scale) {
  const content = [];
  const n = r.int(0, 3);
  for (let i = 0; i < n; i++) {
    if (r.chance(0.15)) content.push(image(r));
    else if (scale >= 0.5 && r.chance(0.12)) content.push({ type: "text", text: words(r, r.int(1900, 2400)) });
    else content.push({ type: "text", text: text(r, scale) });
  }
  const m = { role: "toolResult", toolCallId: `call_${stamp}`, toolName: r.pick(TOOL_NAMES), content };
  if (r.chance(0.2)) m.details = { diff: words(r, 10) };
  m.isError = r.chance(0.15);
  m.timestamp = nextStamp();
  return m;
}

function bashMessage(r, scale) {
  const m = {
    role: "bashExecution",
    command: r.pick(["ls", "npm test", "cat 漢字.txt", "echo 😀", "git status", ""]),
    output: r.chance(0.15) ? "" : text(r, scale),
    exitCode: r.pick([0, 0, 1, 2, 127, undefined, null]),
    cancelled: r.chance(0.1),
    truncated: r.chance(0.15),
  };
  if (m.exitCode === undefined) delete m.exitCode;
  if (r.chance(0.5)) m.fullOutputPath = "/tmp/pi-bash-123.log";
  if (r.chance(0.1)) m.excludeFromContext = true;
  m.timestamp = nextStamp();
  return m;
}

function customMessage(r, scale) {
  const m = { role: "custom", customType: r.pick(["note", "reminder", "ext-state"]) };
  if (r.chance(0.5)) m.content = text(r, scale);
  else m.content = [{ type: "text", text: text(r, scale) }, ...(r.chance(0.3) ? [image(r)] : [])];
  m.display = r.chance(0.7);
  if (r.chance(0.3)) m.details = { n: r.int(0, 9) };
  m.timestamp = nextStamp();
  return m;
}

const summaryMessage = (r, role, scale) => {
  const m = { role, summary: text(r, scale) };
  if (role === "branchSummary") m.fromId = `e${r.int(0, 99)}`;
  else m.tokensBefore = r.int(0, 200000);
  m.timestamp = nextStamp();
  return m;
};

function anyMessage(r, scale = 1, opts = {}) {
  const roll = r.next();
  if (roll < 0.25) return userMessage(r, scale);
  if (roll < 0.55) return assistantMessage(r, scale, opts);
  if (roll < 0.78) return toolResultMessage(r, scale);
  if (roll < 0.85) return bashMessage(r, scale);
  if (roll < 0.91) return customMessage(r, scale);
  if (roll < 0.95) return summaryMessage(r, "branchSummary", scale);
  if (roll < 0.98) return summaryMessage(r, "compactionSummary", scale);
  return { role: r.pick(["system", "note"]), content: text(r, scale), timestamp: nextStamp() };
}

/** A realistic-ish conversation: user turn, assistant with calls, one result per call, ... */
function conversation(r, n, scale = 1, opts = {}) {
  const out = [];
  while (out.length < n) {
    const roll = r.next();
    if (roll < 0.55) {
      out.push(r.chance(0.85) ? userMessage(r, scale) : bashMessage(r, scale));
      const steps = r.int(0, 3);
      for (let s = 0; s < steps && out.length < n; s++) {
        const a = assistantMessage(r, scale, opts);
        out.push(a);
        for (const b of a.content) {
          if (b.type === "toolCall") {
            const t = toolResultMessage(r, scale);
            t.toolCallId = b.id;
            t.toolName = b.name;
            out.push(t);
          }
        }
      }
    } else out.push(anyMessage(r, scale, opts));
  }
  return out.slice(0, n);
}

// ---------------------------------------------------------------------------------------------
// Session entries for findCutPoint / prepareCompaction.
const iso = (ms) => new Date(ms).toISOString();

function sessionEntries(r, n, scale, { withCompaction = true, lean = true, usageChance = 0 } = {}) {
  const messages = conversation(r, n, scale, { lean, usageChance });
  const entries = [];
  let k = 0;
  const id = () => `e${k++}`;
  for (const message of messages) {
    if (r.chance(0.22)) entries.push(nonMessageEntry(r, id(), entries, scale, withCompaction));
    entries.push({ type: "message", id: id(), message });
  }
  let parent = null;
  for (const e of entries) {
    e.parentId = r.chance(0.02) ? null : parent; // a rare broken chain, as after a migration
    e.timestamp = iso(nextStamp());
    parent = e.id;
  }
  return entries;
}

function nonMessageEntry(r, id, before, scale, withCompaction) {
  const kinds = ["thinking_level_change", "model_change", "branch_summary", "custom", "custom_message", "label", "session_info"];
  if (withCompaction) kinds.push("compaction");
  const type = r.pick(kinds);
  const e = { type, id };
  switch (type) {
    case "thinking_level_change": e.thinkingLevel = r.pick(["off", "low", "high"]); break;
    case "model_change": e.provider = "openai"; e.modelId = "gpt-5"; break;
    case "branch_summary": e.fromId = `e${r.int(0, 50)}`; e.summary = r.chance(0.1) ? "" : text(r, scale); break;
    case "custom": e.customType = "ext"; e.data = { x: 1 }; break;
    case "custom_message": {
      e.customType = "note";
      e.content = r.chance(0.5) ? text(r, scale) : [{ type: "text", text: text(r, scale) }];
      e.display = r.chance(0.5);
      if (r.chance(0.3)) e.details = { why: "test" };
      break;
    }
    case "label": e.targetId = `e${r.int(0, 50)}`; e.label = "checkpoint"; break;
    case "session_info": e.name = "My session 😀"; break;
    case "compaction": {
      e.summary = text(r, scale);
      const candidates = before.filter((b) => b.type === "message");
      e.firstKeptEntryId = candidates.length && r.chance(0.85) ? r.pick(candidates).id : "missing";
      e.tokensBefore = r.int(1000, 200000);
      if (r.chance(0.8)) e.details = { readFiles: ["README.md", "漢字.py"], modifiedFiles: ["src/a.ts"] };
      if (r.chance(0.1)) e.fromHook = true;
      break;
    }
  }
  return e;
}

// ---------------------------------------------------------------------------------------------
// Suites.
const plain = (v) => (v === undefined ? null : JSON.parse(JSON.stringify(v)));
const opsToJson = (ops) => ({ read: [...ops.read], written: [...ops.written], edited: [...ops.edited] });

export async function generate(outDir, writeSuite) {
  const agent = await import("@mariozechner/pi-coding-agent");
  const compactionPath = join(modulesDir, "pi-coding-agent", "dist", "core", "compaction", "index.js");
  const compaction = await import(pathToFileURL(compactionPath).href);
  const ai = await import("@mariozechner/pi-ai");

  const suite = (name, pkg, fn, cases, notes) => {
    stamp = 0;
    writeSuite({ suite: name, package: pkg, function: fn, notes, cases });
  };

  suite("pi.estimateTokens", AGENT, "estimateTokens", estimateTokensCases(agent), "chars/4 per Pi message role; .length in UTF-16 units");
  suite("pi.findCutPoint", AGENT, "findCutPoint", findCutPointCases(agent), "input {entries,startIndex,endIndex,keepRecentTokens}");
  suite("pi.findTurnStartIndex", AGENT, "findTurnStartIndex", findTurnStartCases(agent), "input {entries,entryIndex,startIndex}");
  suite("pi.shouldCompact", AGENT, "shouldCompact", shouldCompactCases(agent), "input {contextTokens,contextWindow,settings}");
  suite("pi.calculateContextTokens", AGENT, "calculateContextTokens", calculateCases(agent), "input is a Usage object");
  suite("pi.getLastAssistantUsage", AGENT, "getLastAssistantUsage", lastUsageCases(agent), "input entries; undefined -> null");
  suite("pi.estimateContextTokens", AGENT, "estimateContextTokens", estimateContextCases(compaction), "input messages");
  suite("pi.convertToLlm", AGENT, "convertToLlm", convertCases(agent), "input messages");
  suite("pi.serializeConversation", AGENT, "serializeConversation(convertToLlm(messages))", serializeCases(agent), "input messages (agent messages)");
  suite("pi.isContextOverflow", AI, "isContextOverflow", overflowCases(ai), "input {message, contextWindow?}");
  suite("pi.getOverflowPatterns", AI, "getOverflowPatterns", [{ id: "patterns", input: null, expected: ai.getOverflowPatterns().map((p) => ({ source: p.source, flags: p.flags })) }], "regex source and flags");
  suite("pi.defaultCompactionSettings", AGENT, "DEFAULT_COMPACTION_SETTINGS", [{ id: "defaults", input: null, expected: plain(agent.DEFAULT_COMPACTION_SETTINGS) }], "constant");
  suite("pi.fileOperations", AGENT, "extractFileOpsFromMessage+computeFileLists+formatFileOperations", fileOpsCases(compaction), "input messages; output fileOps sets as arrays, lists and formatted text");
  suite("pi.sessionContext", AGENT, "buildSessionContext", buildContextCases(agent), "input entries (leaf = last entry)");
  suite("pi.malformedInput", AGENT, "estimateTokens / serializeConversation / findCutPoint / findTurnStartIndex / isContextOverflow", malformedCases(agent, ai), "input {fn, args}; expected {throws} or {throws:false, value}: where Pi throws, Python must raise a typed error");
  suite("pi.prepareCompaction", AGENT, "prepareCompaction", prepareCases(compaction), "input {entries, settings}; fileOps sets as arrays; undefined -> null");
}

function estimateTokensCases(agent) {
  const r = rngFrom(101);
  const cases = [];
  const add = (id, message) => cases.push({ id, input: message, expected: agent.estimateTokens(message) });
  add("emoji-user-string", { role: "user", content: "😀😀😀", timestamp: 1 }); // 6 UTF-16 units -> 2
  add("zwj-family", { role: "user", content: "👨‍👩‍👧‍👦", timestamp: 1 });
  add("combining", { role: "user", content: "e\u0301e\u0301e\u0301", timestamp: 1 });
  add("user-empty-array", { role: "user", content: [], timestamp: 1 });
  add("user-missing-text", { role: "user", content: [{ type: "text" }, { type: "text", text: "abcde" }], timestamp: 1 });
  add("user-image-only", { role: "user", content: [image(r)], timestamp: 1 });
  add("toolresult-image", { role: "toolResult", toolCallId: "c", toolName: "read", content: [image(r)], isError: false, timestamp: 1 });
  add("toolresult-string-content", { role: "toolResult", toolCallId: "c", toolName: "read", content: "abcdefghi", isError: false, timestamp: 1 });
  add("custom-string", { role: "custom", customType: "x", content: "12345", display: true, timestamp: 1 });
  add("toolcall-unicode-args", { role: "assistant", content: [{ type: "toolCall", id: "1", name: "write", arguments: { path: "漢字.md", content: "😀\n\"q\"" } }], stopReason: "toolUse", timestamp: 1 });
  add("toolcall-numbers", { role: "assistant", content: [{ type: "toolCall", id: "1", name: "calc", arguments: { a: 1e-7, b: 1e21, c: 0.000001, d: 1e16, e: -0.5 } }], stopReason: "toolUse", timestamp: 1 });
  add("toolcall-numeric-keys", { role: "assistant", content: [{ type: "toolCall", id: "1", name: "x", arguments: { b: 1, 10: 2, 2: 3 } }], stopReason: "toolUse", timestamp: 1 });
  add("toolcall-empty-args", { role: "assistant", content: [{ type: "toolCall", id: "1", name: "", arguments: {} }], stopReason: "toolUse", timestamp: 1 });
  add("assistant-empty", { role: "assistant", content: [], stopReason: "stop", timestamp: 1 });
  add("bash-empty", { role: "bashExecution", command: "", output: "", exitCode: 0, cancelled: false, truncated: false, timestamp: 1 });
  add("branch-summary", { role: "branchSummary", summary: "abc", fromId: "e1", timestamp: 1 });
  add("compaction-summary", { role: "compactionSummary", summary: "a".repeat(4001), tokensBefore: 5, timestamp: 1 });
  add("unknown-role", { role: "system", content: "You are helpful", timestamp: 1 });
  add("control-chars", { role: "assistant", content: [{ type: "toolCall", id: "1", name: "t", arguments: { s: "\u0000\u0001\u001f\u007f\u2028\t" } }], stopReason: "toolUse", timestamp: 1 });
  for (let i = 0; i < 1200; i++) add(`random-${i}`, anyMessage(r, 1.5));
  return cases;
}

function suffixSums(agent, entries, start, end) {
  const sums = [];
  let acc = 0;
  for (let i = end - 1; i >= start; i--) {
    if (entries[i].type !== "message") continue;
    acc += agent.estimateTokens(entries[i].message);
    sums.push(acc);
  }
  return sums;
}

function findCutPointCases(agent) {
  const r = rngFrom(202);
  const cases = [];
  const add = (id, entries, startIndex, endIndex, keepRecentTokens) => {
    const expected = plain(agent.findCutPoint(entries, startIndex, endIndex, keepRecentTokens));
    cases.push({ id, input: { entries, startIndex, endIndex, keepRecentTokens }, expected });
  };
  const msg = (i, message) => ({ type: "message", id: `e${i}`, parentId: i ? `e${i - 1}` : null, timestamp: iso(1767225600000 + i), message });
  const u = (t) => ({ role: "user", content: t, timestamp: 1 });
  const a = (t, calls = 0) => ({ role: "assistant", content: [{ type: "text", text: t }, ...Array.from({ length: calls }, (_, j) => ({ type: "toolCall", id: `c${j}`, name: "read", arguments: { path: `f${j}` } }))], stopReason: calls ? "toolUse" : "stop", timestamp: 1 });
  const tr = (t) => ({ role: "toolResult", toolCallId: "c0", toolName: "read", content: [{ type: "text", text: t }], isError: false, timestamp: 1 });
  const x40 = "x".repeat(40); // 10 tokens
  const turn = [msg(0, u(x40)), msg(1, a(x40, 2)), msg(2, tr(x40)), msg(3, tr(x40)), msg(4, a(x40)), msg(5, u(x40)), msg(6, a(x40))];
  for (const keep of [0, 1, 9, 10, 11, 20, 21, 30, 40, 50, 60, 69, 70, 71, 1000]) add(`turn-keep-${keep}`, turn, 0, turn.length, keep);
  for (const [s, e] of [[0, 0], [3, 3], [2, 5], [5, 7], [7, 7], [4, 2], [6, 7], [1, 4]]) {
    for (const keep of [0, 10, 25, 1000]) add(`turn-range-${s}-${e}-keep-${keep}`, turn, s, e, keep);
  }
  const onlyResults = [msg(0, tr(x40)), msg(1, tr(x40))];
  add("only-tool-results", onlyResults, 0, 2, 5);
  add("empty-entries", [], 0, 0, 100);
  const tail = [msg(0, u(x40)), msg(1, a(x40, 1)), msg(2, tr("y".repeat(400)))];
  add("budget-hit-on-trailing-result", tail, 0, 3, 50); // no cut point at/after the result: default kept
  const withMeta = [msg(0, u(x40)), { type: "model_change", id: "m1", parentId: "e0", timestamp: iso(1767225600001), provider: "x", modelId: "y" },
    { type: "label", id: "l1", parentId: "m1", timestamp: iso(1767225600002), targetId: "e0", label: "a" }, msg(3, a(x40)), msg(4, u(x40))];
  for (const keep of [5, 15, 25]) add(`non-message-extension-${keep}`, withMeta, 0, 5, keep);
  const compactionStop = [msg(0, u(x40)), { type: "compaction", id: "c1", parentId: "e0", timestamp: iso(1), summary: "s", firstKeptEntryId: "e0", tokensBefore: 9 },
    { type: "custom", id: "x1", parentId: "c1", timestamp: iso(2), customType: "t" }, msg(3, a(x40)), msg(4, u(x40))];
  for (const keep of [5, 15, 25]) add(`compaction-boundary-${keep}`, compactionStop, 0, 5, keep);
  const userish = [{ type: "branch_summary", id: "b0", parentId: null, timestamp: iso(1), fromId: "e9", summary: x40 }, msg(1, a(x40)),
    { type: "custom_message", id: "cm", parentId: "e1", timestamp: iso(2), customType: "n", content: x40, display: true }, msg(3, a(x40)), msg(4, bashMessageFixed())];
  for (const keep of [0, 5, 10, 15, 20, 30]) add(`entry-turn-starts-${keep}`, userish, 0, 5, keep);
  // Random sessions, with the budget placed exactly on, just under and just over a boundary.
  for (let i = 0; i < 1050; i++) {
    const n = r.int(0, 10);
    const entries = sessionEntries(r, n, 0.12, { lean: true });
    let start = 0;
    let end = entries.length;
    const roll = r.next();
    if (roll < 0.15) start = r.int(0, entries.length);
    else if (roll < 0.25) end = r.int(0, entries.length);
    else if (roll < 0.32) { start = r.int(0, entries.length); end = r.int(start, entries.length); }
    const sums = suffixSums(agent, entries, Math.min(start, end), end);
    let keep;
    const kr = r.next();
    if (sums.length && kr < 0.45) keep = r.pick(sums) + r.pick([-1, 0, 0, 1]);
    else if (kr < 0.55) keep = r.pick([0, 1, 20000]);
    else keep = r.int(0, (sums.at(-1) ?? 100) + 10);
    add(`random-${i}`, entries, start, end, keep);
  }
  return cases;
}

function bashMessageFixed() {
  return { role: "bashExecution", command: "ls", output: "x".repeat(36), exitCode: 0, cancelled: false, truncated: false, timestamp: 1 };
}

function findTurnStartCases(agent) {
  const r = rngFrom(303);
  const cases = [];
  for (let i = 0; i < 1000; i++) {
    const entries = sessionEntries(r, r.int(1, 8), 0.05, { lean: true });
    const entryIndex = r.int(0, entries.length - 1);
    const startIndex = r.chance(0.7) ? 0 : r.int(0, entryIndex + 1);
    cases.push({ id: `random-${i}`, input: { entries, entryIndex, startIndex }, expected: agent.findTurnStartIndex(entries, entryIndex, startIndex) });
  }
  return cases;
}

function shouldCompactCases(agent) {
  const r = rngFrom(404);
  const cases = [];
  const add = (id, contextTokens, contextWindow, settings) => cases.push({ id, input: { contextTokens, contextWindow, settings }, expected: agent.shouldCompact(contextTokens, contextWindow, settings) });
  const d = agent.DEFAULT_COMPACTION_SETTINGS;
  for (const delta of [-1, 0, 1]) add(`boundary-${delta}`, 200000 - 16384 + delta, 200000, d);
  add("disabled", 10 ** 9, 1000, { ...d, enabled: false });
  for (const enabled of [0, 1, "", "no", null, [], {}]) add(`enabled-${JSON.stringify(enabled)}`, 500, 100, { ...d, enabled });
  const noEnabled = { reserveTokens: 10, keepRecentTokens: 5 };
  add("enabled-missing", 500, 100, noEnabled);
  add("reserve-missing", 500, 100, { enabled: true }); // window - undefined is NaN: never compacts
  add("reserve-null", 101, 100, { enabled: true, reserveTokens: null }); // null counts as 0
  add("reserve-null-equal", 100, 100, { enabled: true, reserveTokens: null });
  add("fractional", 183616.5, 200000, d);
  add("zero-window", 1, 0, d);
  for (let i = 0; i < 1100; i++) {
    const contextWindow = r.pick([8192, 32000, 128000, 200000, 1000000, r.int(1, 300000)]);
    const reserveTokens = r.pick([16384, 0, 4096, r.int(0, contextWindow + 1000)]);
    const boundary = contextWindow - reserveTokens;
    const contextTokens = r.chance(0.4) ? boundary + r.int(-2, 2) : r.int(0, contextWindow * 1.2);
    add(`random-${i}`, contextTokens, contextWindow, { enabled: r.chance(0.9), reserveTokens, keepRecentTokens: 20000 });
  }
  return cases;
}

function calculateCases(agent) {
  const r = rngFrom(505);
  const cases = [];
  const add = (id, u) => cases.push({ id, input: u, expected: agent.calculateContextTokens(u) });
  add("total-zero-falls-back", { input: 10, output: 5, cacheRead: 3, cacheWrite: 2, totalTokens: 0 });
  add("total-missing", { input: 10, output: 5, cacheRead: 3, cacheWrite: 2 });
  add("total-null", { input: 10, output: 5, cacheRead: 3, cacheWrite: 2, totalTokens: null });
  add("total-wins", { input: 10, output: 5, cacheRead: 3, cacheWrite: 2, totalTokens: 7 });
  add("all-zero", { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0 });
  for (let i = 0; i < 1100; i++) add(`random-${i}`, usage(r));
  return cases;
}

function lastUsageCases(agent) {
  const r = rngFrom(606);
  const cases = [];
  for (let i = 0; i < 1000; i++) {
    const entries = sessionEntries(r, r.int(0, 8), 0.05, { lean: true, usageChance: 0.7 });
    cases.push({ id: `random-${i}`, input: entries, expected: plain(agent.getLastAssistantUsage(entries)) });
  }
  return cases;
}

function estimateContextCases(compaction) {
  const r = rngFrom(707);
  const cases = [];
  for (let i = 0; i < 1000; i++) {
    const messages = conversation(r, r.int(0, 8), 0.2);
    cases.push({ id: `random-${i}`, input: messages, expected: plain(compaction.estimateContextTokens(messages)) });
  }
  return cases;
}

function convertCases(agent) {
  const r = rngFrom(808);
  const cases = [];
  const add = (id, messages) => cases.push({ id, input: messages, expected: plain(agent.convertToLlm(messages)) });
  add("bash-variants", [
    { role: "bashExecution", command: "ls", output: "", exitCode: 0, cancelled: false, truncated: false, timestamp: 1 },
    { role: "bashExecution", command: "x", output: "out", exitCode: 3, cancelled: true, truncated: true, fullOutputPath: "/tmp/o", timestamp: 2 },
    { role: "bashExecution", command: "x", output: "out", exitCode: null, cancelled: false, truncated: true, timestamp: 3 },
    { role: "bashExecution", command: "x", output: "out", cancelled: false, truncated: false, excludeFromContext: true, timestamp: 4 },
    { role: "bashExecution", command: "x", output: "o", exitCode: -1, cancelled: false, truncated: true, fullOutputPath: "", timestamp: 5 },
  ]);
  add("no-timestamps", [{ role: "custom", customType: "n", content: "hi", display: false }, { role: "branchSummary", summary: "s", fromId: "e" }]);
  for (let i = 0; i < 1000; i++) add(`random-${i}`, conversation(r, r.int(0, 6), 0.2));
  return cases;
}

function serializeCases(agent) {
  const r = rngFrom(909);
  const cases = [];
  const add = (id, messages) => cases.push({ id, input: messages, expected: agent.serializeConversation(agent.convertToLlm(messages)) });
  const result = (t) => ({ role: "toolResult", toolCallId: "c", toolName: "read", content: [{ type: "text", text: t }], isError: false, timestamp: 1 });
  add("result-exactly-2000", [result("a".repeat(2000))]);
  add("result-2001", [result("a".repeat(2001))]);
  add("result-split-surrogate", [result("a".repeat(1999) + "😀tail")]); // the cut halves the emoji
  add("result-joined-blocks", [{ ...result("a".repeat(1500)), content: [{ type: "text", text: "b".repeat(1500) }, image(r), { type: "text", text: "c" }] }]);
  add("user-empty-string", [{ role: "user", content: "", timestamp: 1 }]);
  add("user-blocks-missing-text", [{ role: "user", content: [{ type: "text" }, { type: "text", text: "x" }], timestamp: 1 }]);
  add("assistant-only-calls", [{ role: "assistant", content: [{ type: "toolCall", id: "1", name: "edit", arguments: { path: "a.ts", n: 1e-7, o: { "2": [1, "😀"], b: null } } }, { type: "toolCall", id: "2", name: "ls", arguments: {} }], stopReason: "toolUse", timestamp: 1 }]);
  add("assistant-empty-text", [{ role: "assistant", content: [{ type: "text", text: "" }, { type: "thinking", thinking: "" }], stopReason: "stop", timestamp: 1 }]);
  add("empty", []);
  for (let i = 0; i < 1100; i++) add(`random-${i}`, conversation(r, r.int(0, 7), 0.5));
  return cases;
}

// Error texts: one example per provider pattern, plus near misses and non-overflow errors.
const OVERFLOW_TEXTS = [
  "prompt is too long: 213462 tokens > 200000 maximum",
  "413 {\"error\":{\"type\":\"request_too_large\",\"message\":\"Request exceeds the maximum size\"}}",
  "Input is too long for requested model.",
  "Your input exceeds the context window of this model",
  "The input token count (1196265) exceeds the maximum number of tokens allowed (1048575)",
  "This model's maximum prompt length is 131072 but the request contains 537812 tokens",
  "Please reduce the length of the messages or completion",
  "This endpoint's maximum context length is 128000 tokens. However, you requested about 130000 tokens",
  "prompt token count of 140000 exceeds the limit of 128000",
  "the request exceeds the available context size, try increasing it",
  "tokens to keep from the initial prompt is greater than the context length",
  "invalid params, context window exceeds limit",
  "Your request exceeded model token limit: 262144 (requested: 300000)",
  "Prompt contains 140000 tokens and 0 draft tokens, too large for model with 131072 maximum context length",
  "model_context_window_exceeded",
  "prompt too long; exceeded max context length by 1200 tokens",
  "prompt too long; exceeded context length by 12 tokens",
  "context_length_exceeded",
  "Context length exceeded",
  "context_length exceeded",
  "Too many tokens in request",
  "Token limit exceeded for this model",
  "400 status code (no body)",
  "413 (no body)",
  "400(no body)",
  "413 status code(no body)",
  "PROMPT IS TOO LONG",
];
const NEAR_MISSES = [
  " 400 status code (no body)", // ^ anchors at the start of the text
  "400 status code (no body) trailing ok",
  "500 status code (no body)",
  "400\u00a0(no body)", // JS \s matches NBSP
  "400\ufeff(no body)", // ... and BOM
  "400\u2028(no body)",
  "400\u001c(no body)", // Python's str.isspace() says yes, JS \s says no
  "input token count\nexceeds the maximum", // JS . stops at line terminators
  "input token count\r\nexceeds the maximum",
  "input token count\u2028exceeds the maximum",
  "input token count \u0085 exceeds the maximum", // NEL is not a JS line terminator
  "maximum prompt length is \u0661\u0662\u0663", // JS \d is ASCII only
  "maximum prompt length is \uff11\uff12",
  "maximum context length is 128000\u00a0tokens",
  "too many to\u212aens", // Kelvin sign: no ASCII case folding in JS
  "too many tokenſ", // long s
  "token lımıt exceeded", // dotless i
  "TOKEN LİMİT EXCEEDED",
  "prompt is too short",
  "context length",
  "exceeds the limit of",
  "",
  "Unknown error",
];
const NON_OVERFLOW = [
  "ThrottlingException: Too many tokens, please wait before trying again.",
  "Throttling error: Too many tokens, please wait before trying again.",
  "Service unavailable: prompt is too long",
  " Throttling error: too many tokens",
  "Rate limit reached: context_length_exceeded",
  "429 Too Many Requests: token limit exceeded",
  "RATE LIMIT: prompt is too long",
  "throttling error:prompt is too long",
  "Throttling error too many tokens",
];

function overflowCases(ai) {
  const r = rngFrom(1010);
  const cases = [];
  const add = (id, message, contextWindow) => {
    const input = contextWindow === undefined ? { message } : { message, contextWindow };
    cases.push({ id, input, expected: ai.isContextOverflow(message, contextWindow) });
  };
  const am = (stopReason, errorMessage, u = {}) => {
    const m = { role: "assistant", content: [], api: "x", provider: "x", model: "x", usage: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, totalTokens: 0, ...u }, stopReason, timestamp: 1 };
    if (errorMessage !== undefined) m.errorMessage = errorMessage;
    return m;
  };
  for (const [i, t] of [...OVERFLOW_TEXTS, ...NEAR_MISSES, ...NON_OVERFLOW].entries()) {
    add(`text-${i}`, am("error", t));
    add(`text-${i}-not-error-stop`, am("stop", t));
  }
  add("error-without-message", am("error"));
  // Silent overflow through usage: with and without a window, at and around the limit.
  for (const cw of [undefined, 0, 100000]) {
    for (const [inp, cr] of [[100001, 0], [100000, 0], [60000, 40001], [50000, 50000], [0, 0]]) {
      add(`stop-${cw}-${inp}-${cr}`, am("stop", undefined, { input: inp, cacheRead: cr }), cw);
      add(`length-${cw}-${inp}-${cr}`, am("length", undefined, { input: inp, cacheRead: cr, output: 0 }), cw);
      add(`length-out1-${cw}-${inp}-${cr}`, am("length", undefined, { input: inp, cacheRead: cr, output: 1 }), cw);
      add(`toolUse-${cw}-${inp}-${cr}`, am("toolUse", undefined, { input: inp, cacheRead: cr }), cw);
    }
  }
  for (const inp of [98999, 99000, 99001]) add(`length-99pct-${inp}`, am("length", undefined, { input: inp, output: 0 }), 100000);
  add("length-99pct-odd-window", am("length", undefined, { input: 126721, output: 0 }), 128001);
  add("error-text-and-silent", am("error", "boom", { input: 5000 }), 1000);
  const all = [...OVERFLOW_TEXTS, ...NEAR_MISSES, ...NON_OVERFLOW];
  for (let i = 0; i < 1100; i++) {
    const cw = r.pick([undefined, 0, 8192, 128000, 200000]);
    let t = r.pick(all);
    if (r.chance(0.3)) t = `${words(r, r.int(0, 20))}${t}`;
    if (r.chance(0.3)) t = `${t}${words(r, r.int(0, 20))}`;
    if (r.chance(0.2)) t = r.chance(0.5) ? t.toUpperCase() : t.toLowerCase();
    const stopReason = r.pick(["error", "error", "stop", "length", "toolUse", "aborted"]);
    const base = cw || 100000;
    const u = { input: r.int(0, base * 1.1), cacheRead: r.chance(0.5) ? r.int(0, base / 4) : 0, output: r.chance(0.5) ? 0 : r.int(0, 100) };
    add(`random-${i}`, am(stopReason, r.chance(0.9) ? t : undefined, u), cw);
  }
  return cases;
}

function fileOpsCases(compaction) {
  const r = rngFrom(1111);
  const cases = [];
  const add = (id, messages) => {
    const ops = compaction.createFileOps();
    for (const m of messages) compaction.extractFileOpsFromMessage(m, ops);
    const { readFiles, modifiedFiles } = compaction.computeFileLists(ops);
    cases.push({ id, input: messages, expected: { fileOps: opsToJson(ops), readFiles, modifiedFiles, formatted: compaction.formatFileOperations(readFiles, modifiedFiles) } });
  };
  const call = (name, args) => ({ type: "toolCall", id: "c", name, arguments: args });
  const am = (...content) => ({ role: "assistant", content, stopReason: "toolUse", timestamp: 1 });
  add("sort-utf16-order", [am(call("read", { path: "\uff01.txt" }), call("read", { path: "😀.txt" }), call("read", { path: "\ue000" }), call("read", { path: "a" }), call("read", { path: "Z" }))]);
  add("read-then-edit", [am(call("read", { path: "a.ts" }), call("edit", { path: "a.ts" }), call("write", { path: "b.ts" }), call("read", { path: "c.ts" }))]);
  add("junk-blocks", [am(null, "text", 5, { type: "toolCall", name: "read" }, { type: "toolCall", arguments: { path: "x" } }, call("read", null), call("read", { path: "" }), call("read", { path: 7 }), call("READ", { path: "y" }), call("read", "path"))]);
  add("assistant-string-content", [{ role: "assistant", content: "read a.ts", stopReason: "stop", timestamp: 1 }]);
  add("non-assistant", [{ role: "user", content: [call("read", { path: "u.ts" })], timestamp: 1 }]);
  add("nothing", []);
  for (let i = 0; i < 1000; i++) add(`random-${i}`, conversation(r, r.int(0, 10), 0.1, { lean: true }));
  return cases;
}

const ODD_TIMESTAMPS = [
  "2026-01-01T00:00:00.000Z", "2026-02-30", "2026-04-31", "2026-02-32", "2026-13-01", "2026-01-01T24:00Z",
  "2026-01-01T24:00:01Z", "2026-01-01T00:00+23:59", "2026-01-01T00:00+05:60", "2026-01-01T00:00:00.1234Z",
  "2026", "2026-07", "+275760-09-13T00:00:00.000Z", "+275760-09-13T00:00:00.001Z", "-000001-01-01T00:00:00Z",
  0, 1767225600000.7, -1.5, 8.64e15, 8.64e15 + 1, null,
];

function buildContextCases(agent) {
  const r = rngFrom(1212);
  const cases = [];
  // Entry timestamps become message timestamps through new Date(t).getTime().
  const odd = ODD_TIMESTAMPS.map((timestamp, i) => ({ type: "custom_message", id: `t${i}`, parentId: i ? `t${i - 1}` : null, timestamp, customType: "n", content: "x", display: true }));
  odd.push({ type: "branch_summary", id: "tb", parentId: `t${odd.length - 1}`, fromId: "t0", summary: "s" });
  cases.push({ id: "timestamps", input: odd, expected: plain(agent.buildSessionContext(odd)) });
  for (let i = 0; i < 500; i++) {
    const entries = sessionEntries(r, r.int(0, 10), 0.1, { lean: true, usageChance: 0.5 });
    cases.push({ id: `random-${i}`, input: entries, expected: plain(agent.buildSessionContext(entries)) });
  }
  return cases;
}

function prepareCases(compaction) {
  const r = rngFrom(1313);
  const cases = [];
  const add = (id, entries, settings) => {
    const prep = compaction.prepareCompaction(entries, settings);
    const expected = prep === undefined ? null : plain({ ...prep, fileOps: opsToJson(prep.fileOps) });
    cases.push({ id, input: { entries, settings }, expected });
  };
  const settings = (keep) => ({ enabled: true, reserveTokens: 16384, keepRecentTokens: keep });
  add("empty", [], settings(100));
  const small = sessionEntries(r, 6, 0.2, { lean: true, usageChance: 0.5 });
  add("keep-missing", small, { enabled: true, reserveTokens: 16384 }); // NaN budget: never reached
  add("keep-null", small, { enabled: true, reserveTokens: 16384, keepRecentTokens: null });
  for (let i = 0; i < 1000; i++) {
    const entries = sessionEntries(r, r.int(0, 9), 0.05, { lean: true, usageChance: 0.6 });
    if (r.chance(0.05) && entries.length) entries.push({ ...nonMessageEntry(r, "last", entries, 0.2, true), type: "compaction", summary: "s", firstKeptEntryId: entries[0].id, tokensBefore: 1, parentId: entries.at(-1).id, timestamp: iso(nextStamp()) });
    if (r.chance(0.03) && entries.length) delete entries[r.int(0, entries.length - 1)].id;
    const total = entries.reduce((s, e) => s + (e.type === "message" ? compaction.estimateTokens(e.message) : 0), 0);
    const keep = r.chance(0.2) ? r.pick([0, 20000]) : r.int(0, total + 5);
    add(`random-${i}`, entries, settings(keep));
  }
  return cases;
}

// Inputs Pi's types forbid: record whether the real function throws, and what it returns if not.
function malformedCases(agent, ai) {
  const cases = [];
  const fns = {
    estimateTokens: (m) => agent.estimateTokens(m),
    serializeConversation: (ms) => agent.serializeConversation(agent.convertToLlm(ms)),
    findCutPoint: (e, s, end, k) => agent.findCutPoint(e, s, end, k),
    findTurnStartIndex: (e, i, s) => agent.findTurnStartIndex(e, i, s),
    isContextOverflow: (m, w) => ai.isContextOverflow(m, w),
  };
  const add = (id, fn, ...args) => {
    let expected;
    try {
      expected = { throws: false, value: plain(fns[fn](...args)) };
    } catch {
      expected = { throws: true };
    }
    cases.push({ id, input: { fn, args }, expected });
  };
  const est = [
    ["assistant-null-block", { role: "assistant", content: [null] }],
    ["assistant-no-content", { role: "assistant" }],
    ["assistant-string-content", { role: "assistant", content: "plain text" }],
    ["toolcall-no-arguments", { role: "assistant", content: [{ type: "toolCall", name: "x" }] }],
    ["text-block-no-text", { role: "assistant", content: [{ type: "text" }] }],
    ["user-null-block", { role: "user", content: [null] }],
    ["user-no-content", { role: "user" }],
    ["user-null-content", { role: "user", content: null }],
    ["toolresult-no-content", { role: "toolResult" }],
    ["toolresult-null-block", { role: "toolResult", content: [null] }],
    ["custom-null-content", { role: "custom", content: null }],
    ["bash-no-output", { role: "bashExecution", command: "ls" }],
    ["summary-missing", { role: "branchSummary" }],
  ];
  for (const [id, m] of est) add(`estimateTokens-${id}`, "estimateTokens", m);
  const ser = [
    ["toolresult-string-content", [{ role: "toolResult", content: "text" }]],
    ["user-no-content", [{ role: "user" }]],
    ["toolcall-null-arguments", [{ role: "assistant", content: [{ type: "toolCall", name: "x", arguments: null }] }]],
    ["assistant-string-content", [{ role: "assistant", content: "hi" }]],
    ["custom-no-content", [{ role: "custom", customType: "x", display: true }]],
  ];
  for (const [id, ms] of ser) add(`serialize-${id}`, "serializeConversation", ms);
  const two = [
    { type: "message", id: "a", parentId: null, timestamp: "2026-01-01T00:00:00.000Z", message: { role: "toolResult", content: [] } },
    { type: "message", id: "b", parentId: "a", timestamp: "2026-01-01T00:00:01.000Z", message: { role: "toolResult", content: [] } },
  ];
  add("cut-end-past-length", "findCutPoint", two, 0, 3, 1);
  add("cut-negative-start", "findCutPoint", two, -1, 2, 1);
  add("cut-start-after-end", "findCutPoint", two, 3, 2, 1);
  add("turn-negative-start", "findTurnStartIndex", two, 1, -1);
  add("turn-index-past-length", "findTurnStartIndex", two, 5, 0);
  add("overflow-stop-no-usage", "isContextOverflow", { stopReason: "stop" }, 100);
  add("overflow-stop-empty-usage", "isContextOverflow", { stopReason: "stop", usage: {} }, 100);
  add("overflow-length-no-output", "isContextOverflow", { stopReason: "length", usage: { input: 100 } }, 100);
  add("overflow-numeric-error", "isContextOverflow", { stopReason: "error", errorMessage: 413 }, 100);
  add("overflow-stop-no-window", "isContextOverflow", { stopReason: "stop" });
  return cases;
}
