// Fixtures for this library's own TypeScript reference of the trimming rules
// (compat_fixtures/reference/trim.ts, "context-manager-reference@0.1.0").
//
// Seeded conversations in OpenAI and Anthropic shapes (parallel tool calls, pins, priorities 0-3,
// images, emoji / CJK / combining marks, empty content, names, thinking, unknown part types,
// several system messages, open tool groups at the end) are trimmed by the reference; Python's
// `context_manager.trim()` must return the same kept indices (context_manager/parity/reference.py).
// The reference is TypeScript: it is loaded with the pinned `tsx` (no build step, nothing written).
//
// Suites: reference.trim.sliding_window, reference.trim.priority, reference.trim.invalid
// (histories that break the tool-call protocol or the message shapes, bad options) and
// reference.trim.providers (the same random conversations trimmed with `provider` set: the newest
// exchange protected, the provider's rules kept; see reference/providers.ts). A case is
//   input:    { messages, options: { maxTokens, strategy, reserveTokens, maxMessages, priorities,
//                                    pinned, estimator: { charsPerToken, messageOverhead,
//                                                         promptOverhead, imageTokens },
//                                    provider (providers suite only) } }
//   expected: kept message indices in order, or { error: "overflow", required, budget }, or
//             { error: "invalid_message", index } / { error: "configuration" } (reference throws).
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { tsImport } from "tsx/esm/api";
import { makeRng } from "../lib/rng.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const REFERENCE = pathToFileURL(join(here, "..", "reference", "trim.ts")).href;
const SEEDS = { sliding_window: 20261121, priority: 20261122, invalid: 20261123, providers: 20261124 };
const PROVIDER_NAMES = ["openai", "openai-responses", "anthropic", "bedrock", "gemini"];
const PROVIDER_CASES = 60; // per provider and strategy
const RANDOM_CASES = 1100;
const BROKEN_CASES = 400;

// ---------------------------------------------------------------- texts
const WORDS = [
  "the", "budget", "token", "context", "window", "trim", "message", "tool", "result", "ok", "a",
  "naïve", "café", "Zürich", "日本語", "中文字符", "한국어", "😀", "🚀✨", "👩‍💻", "🇫🇷", "e\u0301",
  "n\u0303\u0323", "Ω≈ç√", "مرحبا", "x", "42", "{json}", "\"quoted\"", "back\\slash", "tab\tbed",
];

function sentence(rng, lo, hi) {
  const words = [];
  for (let i = rng.int(lo, hi); i > 0; i -= 1) words.push(rng.pick(WORDS));
  return words.join(" ");
}

function text(rng) {
  const roll = rng.next();
  if (roll < 0.08) return "";
  if (roll < 0.6) return sentence(rng, 1, 9);
  if (roll < 0.93) {
    const lines = [];
    for (let i = rng.int(2, 4); i > 0; i -= 1) lines.push(sentence(rng, 0, 6));
    return lines.join("\n");
  }
  return sentence(rng, 15, 30); // a long one
}

const IMAGES = [
  { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } },
  { type: "image_url", image_url: { url: "https://example.com/cat.png", detail: "low" } },
  { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
  { type: "input_image", image_url: "https://example.com/dog.jpg" },
];

/** Content parts we do not model: they cost the length of their compact JSON. */
function unknownPart(rng) {
  return rng.pick([
    { type: "document", source: { type: "text", media_type: "text/plain", data: sentence(rng, 1, 4) } },
    { type: "input_audio", input_audio: { data: "UklGRg==", format: "wav" } },
    { type: "custom_x", values: [1, 2.5, -3, true, null, "é"], nested: { k: sentence(rng, 0, 2) } },
    { type: "redacted_thinking", data: "EmwKAhgBEgy3" },
    { kind: "no type field", text: "ignored as text" },
  ]);
}

/** A content list: several text parts (joined with "\n"), images, unknown parts, bare strings. */
function contentParts(rng, { thinking = false } = {}) {
  const out = [];
  if (thinking && rng.chance(0.5)) out.push({ type: "thinking", thinking: text(rng), signature: "sig" });
  for (let i = rng.int(0, 3); i > 0; i -= 1) {
    const roll = rng.next();
    if (roll < 0.6) out.push({ type: rng.pick(["text", "text", "input_text", "output_text"]), text: text(rng) });
    else if (roll < 0.75) out.push(rng.pick(IMAGES));
    else if (roll < 0.85) out.push(unknownPart(rng));
    else if (roll < 0.92) out.push(sentence(rng, 0, 4)); // a bare string part
    else out.push({ type: "refusal", refusal: sentence(rng, 1, 5) });
  }
  return out;
}

function content(rng, options = {}) {
  const roll = rng.next();
  if (roll < 0.04) return null;
  if (roll < 0.7) return text(rng);
  return contentParts(rng, options);
}

function withName(rng, message) {
  if (rng.chance(0.1)) message.name = rng.pick(["alice", "bob_42", "Zoë", "机器人", ""]);
  return message;
}

// ---------------------------------------------------------------- turns
function toolArguments(rng) {
  return rng.pick([
    { query: sentence(rng, 1, 5) },
    { path: "src/main.py", line: rng.int(1, 400) },
    { items: [1, 2.5, "three", null, true], nested: { deep: sentence(rng, 0, 3) } },
    { ratio: rng.int(1, 999) / 1000, emoji: "🧪" },
    {},
  ]);
}

function toolResultContent(rng) {
  const roll = rng.next();
  if (roll < 0.05) return null;
  if (roll < 0.1) return "";
  if (roll < 0.7) return rng.chance(0.1) ? sentence(rng, 30, 60) : text(rng); // sometimes long
  return contentParts(rng, { thinking: true });
}

/** An OpenAI tool group: assistant tool_calls, then one tool message per call (maybe not all). */
function openAiToolGroup(rng, ids, complete) {
  const call = {
    role: "assistant",
    content: rng.chance(0.6) ? null : text(rng),
    tool_calls: ids.map((id) => ({
      id,
      type: "function",
      function: {
        name: rng.pick(["search", "read_file", "run", "ƒetch", "検索"]),
        arguments: rng.chance(0.9) ? JSON.stringify(toolArguments(rng)) : toolArguments(rng),
      },
    })),
  };
  if (rng.chance(0.15)) call.reasoning_content = text(rng);
  const answered = complete ? ids : ids.slice(0, rng.int(0, ids.length - 1));
  const results = rng.chance(0.3) ? [...answered].reverse() : answered;
  return [call, ...results.map((id) => withName(rng, { role: "tool", tool_call_id: id, content: toolResultContent(rng) }))];
}

/** An Anthropic tool group: tool_use blocks, then results in one or several user messages. */
function anthropicToolGroup(rng, ids, complete) {
  const blocks = [];
  if (rng.chance(0.3)) blocks.push({ type: "thinking", thinking: text(rng), signature: "sig" });
  if (rng.chance(0.6)) blocks.push({ type: "text", text: text(rng) });
  for (const id of ids) {
    const block = { type: "tool_use", id, name: rng.pick(["search", "read_file", "bash"]) };
    if (rng.chance(0.9)) block.input = toolArguments(rng);
    blocks.push(block);
  }
  const call = { role: "assistant", content: blocks };
  const answered = complete ? ids : ids.slice(0, rng.int(0, ids.length - 1));
  const result = (id) => {
    const block = { type: "tool_result", tool_use_id: id };
    const body = toolResultContent(rng);
    if (body !== null || rng.chance(0.5)) block.content = body;
    if (rng.chance(0.1)) block.is_error = true;
    return block;
  };
  const out = [call];
  if (answered.length > 0 && rng.chance(0.6)) {
    const carry = answered.map(result);
    if (rng.chance(0.25)) carry.push({ type: "text", text: text(rng) }); // results plus a remark
    out.push({ role: "user", content: carry });
  } else {
    for (const id of answered) out.push({ role: "user", content: [result(id)] });
  }
  return out;
}

function turn(rng, n, shape) {
  const roll = rng.next();
  if (roll < 0.32) return [withName(rng, { role: "user", content: content(rng) })];
  if (roll < 0.58) {
    const message = { role: "assistant", content: content(rng, { thinking: shape === "anthropic" }) };
    if (shape === "openai" && rng.chance(0.1)) message.reasoning = text(rng);
    if (shape === "openai" && rng.chance(0.05)) message.tool_calls = []; // no calls at all
    return [withName(rng, message)];
  }
  if (roll < 0.64) return [withName(rng, { role: rng.pick(["system", "developer"]), content: content(rng) })];
  const ids = [];
  for (let j = rng.chance(0.7) ? 1 : rng.int(2, 4); j > 0; j -= 1) ids.push(`call_${n}_${j}`);
  const anthropic = shape === "anthropic" || (shape === "mixed" && rng.chance(0.5));
  return anthropic ? anthropicToolGroup(rng, ids, true) : openAiToolGroup(rng, ids, true);
}

function conversation(rng) {
  const shape = rng.pick(["openai", "openai", "anthropic", "anthropic", "mixed"]);
  const messages = [];
  if (rng.chance(0.65)) {
    messages.push({ role: rng.chance(0.85) ? "system" : "developer", content: rng.chance(0.8) ? text(rng) : contentParts(rng) });
  }
  const turns = rng.chance(0.1) ? rng.int(0, 2) : rng.int(2, 8);
  for (let n = 0; n < turns; n += 1) messages.push(...turn(rng, n, shape));
  if (rng.chance(0.12)) {
    // A tool group at the end still waiting for (some of) its results.
    const ids = [];
    for (let j = rng.int(1, 3); j > 0; j -= 1) ids.push(`open_${j}`);
    const anthropic = shape === "anthropic" || (shape === "mixed" && rng.chance(0.5));
    messages.push(...(anthropic ? anthropicToolGroup(rng, ids, false) : openAiToolGroup(rng, ids, false)));
  }
  return messages;
}

// ---------------------------------------------------------------- options and budgets
function estimatorOptions(rng) {
  if (rng.chance(0.6)) return { charsPerToken: 4, messageOverhead: 3, promptOverhead: 3, imageTokens: 85 };
  return {
    charsPerToken: rng.pick([1, 2, 3, 3.5, 4, 4.5, 2.7]),
    messageOverhead: rng.int(0, 5),
    promptOverhead: rng.int(0, 4),
    imageTokens: rng.pick([0, 1, 85, 170, 765]),
  };
}

/**
 * A budget that makes trimming interesting: anywhere from nothing to everything, and often
 * exactly on a boundary (the cost of the fixed part plus some newest groups, or one token less).
 */
function pickBudget(rng, ref, messages, options) {
  const conv = ref.readConversation(messages, options);
  const complete = conv.groups.filter((g, i) => i < conv.groups.length - 1 || g.pending.length === 0);
  const fixed = conv.estimator.promptOverhead + conv.systemTokens + complete.filter((g) => g.pinned).reduce((s, g) => s + g.tokens, 0);
  const total = fixed + complete.filter((g) => !g.pinned).reduce((s, g) => s + g.tokens, 0);
  const latest = complete.find((g) => g.hasLatestUser && !g.pinned);
  const mustSend = fixed + (latest ? latest.tokens : 0);
  const roll = rng.next();
  if (roll < 0.08) return rng.int(1, total + 10); // overflow is likely
  if (roll < 0.35) return rng.int(Math.max(1, mustSend - 3), total + 10);
  if (roll < 0.45) return Math.max(1, total + rng.int(-1, 1));
  // the fixed part plus the k newest unpinned groups (priority: k cheapest-to-keep, roughly)
  const unpinned = complete.filter((g) => !g.pinned);
  const k = rng.int(0, unpinned.length);
  const suffix = unpinned.slice(unpinned.length - k).reduce((s, g) => s + g.tokens, 0);
  const boundary = fixed + suffix + (latest && rng.chance(0.5) ? latest.tokens : 0);
  return Math.max(1, boundary + rng.pick([0, 0, 0, -1, 1]));
}

function randomCase(rng, ref, strategy, n) {
  const messages = conversation(rng);
  const count = messages.length;
  const pinned = [];
  if (count > 0 && rng.chance(0.45)) {
    for (let k = rng.int(1, 3); k > 0; k -= 1) pinned.push(rng.chance(0.05) ? count + rng.int(0, 2) : rng.int(0, count - 1));
  }
  const flat = rng.chance(0.2);
  const priorities = messages.map(() => (flat ? 0 : rng.int(0, 3)));
  let maxMessages = null;
  if (strategy === "sliding_window" && rng.chance(0.4)) maxMessages = rng.int(0, count + 1);
  const options = {
    maxTokens: 1,
    strategy,
    reserveTokens: 0,
    maxMessages,
    priorities,
    pinned,
    estimator: estimatorOptions(rng),
  };
  const budget = pickBudget(rng, ref, messages, options);
  const reserve = rng.chance(0.5) ? 0 : rng.int(1, 500);
  options.maxTokens = budget + reserve;
  options.reserveTokens = reserve;
  return { id: `${strategy}-${String(n).padStart(4, "0")}`, input: { messages, options } };
}

// ---------------------------------------------------------------- hand-picked edge cases
const DEFAULT_ESTIMATOR = { charsPerToken: 4, messageOverhead: 3, promptOverhead: 3, imageTokens: 85 };

function edgeCases(ref, strategy) {
  const sys = { role: "system", content: "You are terse." }; // 14 chars -> 4 + 3 = 7 tokens
  const u1 = { role: "user", content: "first question" }; // 14 -> 7
  const a1 = { role: "assistant", content: "first answer!" }; // 13 -> 7
  const u2 = { role: "user", content: "second question" }; // 15 -> 7
  const chat = [sys, u1, a1, u2];
  const opts = (maxTokens, extra = {}) => ({
    maxTokens,
    strategy,
    reserveTokens: 0,
    maxMessages: null,
    priorities: extra.priorities ?? null,
    pinned: [],
    estimator: DEFAULT_ESTIMATOR,
    ...extra,
  });
  const total = (messages, options) => {
    const conv = ref.readConversation(messages, { ...options, priorities: undefined });
    return conv.estimator.promptOverhead + conv.systemTokens + conv.groups.reduce((s, g) => s + g.tokens, 0);
  };
  const all = total(chat, opts(1)); // 3 + 7 * 4 = 31
  const longTool = [
    sys,
    u1,
    {
      role: "assistant",
      content: null,
      tool_calls: [
        { id: "a", type: "function", function: { name: "run", arguments: "{\"cmd\":\"ls\"}" } },
        { id: "b", type: "function", function: { name: "run", arguments: "{\"cmd\":\"pwd\"}" } },
      ],
    },
    { role: "tool", tool_call_id: "b", content: "x".repeat(400) },
    { role: "tool", tool_call_id: "a", content: "file.txt" },
    { role: "assistant", content: "done" },
  ];
  const cases = [
    ["everything-fits-exactly", chat, opts(all)],
    ["everything-fits-with-room", chat, opts(all + 100)],
    ["one-token-short", chat, opts(all - 1)],
    ["nothing-but-the-latest-user-fits", chat, opts(3 + 7 + 7)],
    ["latest-user-one-token-short", chat, opts(3 + 7 + 7 - 1)],
    ["system-alone-over-budget", [sys], opts(9)],
    ["system-alone-exactly", [sys], opts(10)],
    ["system-over-budget-with-user", chat, opts(5)],
    ["empty-conversation", [], opts(3)],
    ["empty-conversation-below-priming", [], opts(2)],
    ["no-system-prompt", [u1, a1, u2], opts(17)],
    ["developer-first", [{ role: "developer", content: "rules" }, u1, a1, u2], opts(20)],
    ["second-system-is-ordinary", [sys, u1, { role: "system", content: "extra rules here" }, a1, u2], opts(24)],
    ["reserve-tokens", chat, opts(all + 50, { reserveTokens: 50 })],
    ["reserve-tokens-one-short", chat, opts(all + 49, { reserveTokens: 50 })],
    ["pinned-oldest", chat, opts(3 + 7 + 7 + 7, { pinned: [1] })],
    ["pinned-system-index-ignored", chat, opts(24, { pinned: [0] })],
    ["pinned-out-of-range-ignored", chat, opts(24, { pinned: [99] })],
    ["pinned-latest-user", chat, opts(17, { pinned: [3] })],
    ["pinned-over-budget", chat, opts(24, { pinned: [1, 2] })],
    ["pinned-result-pins-its-group", longTool, opts(40, { pinned: [4] })],
    ["tool-group-dropped-whole", longTool, opts(30)],
    ["tool-group-fits-exactly", longTool, opts(total(longTool, opts(1)) - 7)],
    ["open-group-at-end-withheld", [sys, u1, { role: "assistant", content: null, tool_calls: [{ id: "z", type: "function", function: { name: "f", arguments: "{}" } }] }], opts(100)],
    [
      "open-group-holds-latest-user",
      [
        sys,
        u1,
        { role: "assistant", content: [{ type: "tool_use", id: "p", name: "f", input: {} }, { type: "tool_use", id: "q", name: "f", input: {} }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "p", content: "half" }] },
      ],
      opts(12),
    ],
    ["only-images", [{ role: "user", content: [IMAGES[0], IMAGES[2]] }], opts(3 + 3 + 170)],
    ["only-images-one-short", [{ role: "user", content: [IMAGES[0], IMAGES[2]] }], opts(3 + 3 + 170 - 1)],
    ["empty-contents", [{ role: "user", content: "" }, { role: "assistant", content: [] }, { role: "assistant", content: null }, { role: "user", content: [{ type: "text", text: "" }] }], opts(15)],
    ["zero-overheads", chat, opts(20, { estimator: { charsPerToken: 4, messageOverhead: 0, promptOverhead: 0, imageTokens: 0 } })],
    ["fractional-chars-per-token", chat, opts(30, { estimator: { charsPerToken: 3.5, messageOverhead: 1, promptOverhead: 2, imageTokens: 85 } })],
    ["surrogate-pairs-count-two", [{ role: "user", content: "😀😀" }], opts(3 + 1 + 3)],
    ["combining-marks-count-each", [{ role: "user", content: "e\u0301e\u0301e\u0301" }], opts(3 + 2 + 3)],
  ];
  if (strategy === "sliding_window") {
    cases.push(
      ["max-messages-0", chat, opts(1000, { maxMessages: 0 })],
      ["max-messages-0-no-user", [sys, a1, a1], opts(1000, { maxMessages: 0 })],
      ["max-messages-1", chat, opts(1000, { maxMessages: 1 })],
      ["max-messages-cuts-tool-group", longTool, opts(1000, { maxMessages: 3 })],
      ["max-messages-with-latest-user-outside", [sys, u2, ...longTool.slice(2)], opts(1000, { maxMessages: 2 })],
      ["latest-user-outside-window", [sys, u1, a1, u2, ...longTool.slice(2)], opts(3 + 7 + 7 + 105)],
    );
  } else {
    cases.push(
      ["priority-drops-low-first", chat, opts(24, { priorities: [0, 3, 0, 0] })],
      ["priority-ties-oldest-first", [sys, u1, a1, a1, u2], opts(24, { priorities: [0, 1, 1, 1, 0] })],
      ["priority-group-takes-highest", longTool, opts(120, { priorities: [0, 1, 0, 0, 3, 0] })],
      ["priority-latest-user-kept-at-0", chat, opts(17, { priorities: [3, 3, 3, 0] })],
    );
  }
  // Inputs where Python and the reference are known to disagree are kept (see README.md, "Bugs the reference found").
  cases.push(
    // JSON of tool arguments: JS writes 0.00001 and 1e-7, Python's json.dumps writes 1e-05 and 1e-07.
    [
      "json-small-float-arguments",
      [
        { role: "assistant", content: [{ type: "tool_use", id: "t", name: "fit", input: { tol: 0.00001, eps: 1e-7 } }] },
        { role: "user", content: [{ type: "tool_result", tool_use_id: "t", content: "ok" }] },
      ],
      opts(1, { estimator: { charsPerToken: 1, messageOverhead: 0, promptOverhead: 0, imageTokens: 0 } }),
    ],
    // A lone surrogate (e.g. a TS front end cut a string in the middle of an emoji): .length 1.
    ["lone-surrogate-text", [{ role: "user", content: "😀".slice(0, 1) + "abc" }], opts(1, { estimator: { charsPerToken: 1, messageOverhead: 0, promptOverhead: 0, imageTokens: 0 } })],
  );
  return cases.map(([name, messages, options]) => {
    const priorities = options.priorities ?? messages.map(() => 0);
    return { id: `edge-${name}`, input: { messages, options: { ...options, priorities } } };
  });
}

// ---------------------------------------------------------------- invalid input
const call = (id, name = "f") => ({ id, type: "function", function: { name, arguments: "{}" } });
const asksFor = (...ids) => ({ role: "assistant", content: null, tool_calls: ids.map((id) => call(id)) });
const answers = (id, content = "ok") => ({ role: "tool", tool_call_id: id, content });
const hi = { role: "user", content: "hi" };

/** Histories that break the tool-call protocol or the message shapes, and bad options. */
function invalidCases() {
  const ok = (messages, extra = {}) => ({
    maxTokens: 1000,
    strategy: "sliding_window",
    reserveTokens: 0,
    maxMessages: null,
    priorities: messages.map(() => 0),
    pinned: [],
    estimator: DEFAULT_ESTIMATOR,
    ...extra,
  });
  const anthropicCall = { role: "assistant", content: [{ type: "tool_use", id: "u", name: "f", input: {} }] };
  const cases = [
    ["orphan-openai-result", [hi, answers("x")]],
    ["orphan-anthropic-result", [hi, { role: "user", content: [{ type: "tool_result", tool_use_id: "x", content: "?" }] }]],
    ["message-while-results-missing", [{ role: "system", content: "s" }, hi, asksFor("a", "b"), answers("a"), hi]],
    ["assistant-while-results-missing", [hi, anthropicCall, { role: "assistant", content: "no result yet" }]],
    ["duplicate-result", [hi, asksFor("a", "b"), answers("a"), answers("a"), answers("b")]],
    ["result-after-group-closed", [hi, asksFor("a"), answers("a"), answers("a")]],
    ["reused-call-id", [hi, asksFor("a"), answers("a"), hi, asksFor("a"), answers("a")]],
    [
      "duplicate-result-in-one-message",
      [hi, anthropicCall, { role: "user", content: [{ type: "tool_result", tool_use_id: "u", content: "1" }, { type: "tool_result", tool_use_id: "u", content: "2" }] }],
    ],
    ["first-problem-wins", [hi, answers("x"), { role: "bot", content: "?" }]],
    ["unknown-role", [hi, { role: "bot", content: "beep" }]],
    ["missing-role", [{ content: "who am I" }]],
    ["content-is-a-number", [{ role: "user", content: 42 }]],
    ["content-is-an-object", [{ role: "user", content: { text: "hi" } }]],
    ["part-is-a-number", [{ role: "user", content: ["fine", 7] }]],
    ["part-is-a-list", [{ role: "user", content: [["nested"]] }]],
    ["text-part-text-not-string", [{ role: "user", content: [{ type: "text", text: 5 }] }]],
    ["text-part-text-null", [{ role: "user", content: [{ type: "text", text: null }] }]],
    ["tool-message-without-id", [hi, asksFor("a"), { role: "tool", content: "r" }]],
    ["tool-message-empty-id", [hi, asksFor("a"), { role: "tool", tool_call_id: "", content: "r" }]],
    ["tool-calls-on-user", [{ role: "user", content: "x", tool_calls: [call("a")] }]],
    ["tool-calls-not-a-list", [hi, { role: "assistant", content: null, tool_calls: call("a") }]],
    ["tool-call-without-id", [hi, { role: "assistant", content: null, tool_calls: [{ type: "function", function: { name: "f", arguments: "{}" } }] }]],
    ["tool-call-without-function", [hi, { role: "assistant", content: null, tool_calls: [{ id: "a", type: "function" }] }]],
    ["tool-use-without-name", [hi, { role: "assistant", content: [{ type: "tool_use", id: "a", input: {} }] }]],
    ["tool-result-without-id", [hi, { role: "user", content: [{ type: "tool_result", content: "r" }] }]],
    ["tool-result-content-number", [hi, anthropicCall, { role: "user", content: [{ type: "tool_result", tool_use_id: "u", content: 3 }] }]],
    ["name-not-a-string", [{ role: "user", content: "x", name: 7 }]],
    ["bad-system-prompt", [{ role: "system", content: 1 }, hi]],
  ].map(([name, messages]) => [name, messages, ok(messages)]);
  const chat = [{ role: "system", content: "s" }, hi, { role: "assistant", content: "a" }, hi];
  cases.push(
    ["max-tokens-zero", chat, ok(chat, { maxTokens: 0 })],
    ["max-tokens-fraction", chat, ok(chat, { maxTokens: 10.5 })],
    ["reserve-equals-window", chat, ok(chat, { reserveTokens: 1000 })],
    ["reserve-negative", chat, ok(chat, { reserveTokens: -1 })],
    ["max-messages-negative", chat, ok(chat, { maxMessages: -1 })],
    ["max-messages-with-priority", chat, ok(chat, { strategy: "priority", maxMessages: 2 })],
    ["unknown-strategy", chat, ok(chat, { strategy: "lifo" })],
    ["priorities-too-short", chat, ok(chat, { priorities: [0, 1] })],
    ["config-error-before-message-error", [{ role: "bot" }], ok([{ role: "bot" }], { maxTokens: 0 })],
  );
  return cases.map(([name, messages, options]) => ({ id: `invalid-${name}`, input: { messages, options } }));
}

/** A valid seeded conversation with one mutation that usually breaks the tool-call protocol. */
function brokenCase(rng, n) {
  let messages = [];
  while (!messages.some((m) => m.role === "tool" || (Array.isArray(m.content) && m.content.some((p) => p && p.type === "tool_result")))) {
    messages = conversation(rng);
  }
  const carriers = messages.flatMap((m, i) => (m.role === "tool" || (Array.isArray(m.content) && m.content.some((p) => p && p.type === "tool_result")) ? [i] : []));
  const at = rng.pick(carriers);
  const mutation = rng.pick(["drop", "repeat", "move-early", "move-late", "reuse-id"]);
  messages = messages.map((m) => structuredClone(m));
  if (mutation === "drop") messages.splice(at, 1);
  else if (mutation === "repeat") messages.splice(at + 1, 0, structuredClone(messages[at]));
  else if (mutation === "move-early") messages.splice(rng.int(0, at), 0, ...messages.splice(at, 1));
  else if (mutation === "move-late") messages.push(...messages.splice(at, 1));
  else {
    let caller = at - 1; // the assistant message whose call this message answers
    while (messages[caller].role !== "assistant") caller -= 1;
    messages.push({ role: "user", content: "next" }, structuredClone(messages[caller]), structuredClone(messages[at]));
  }
  const options = {
    maxTokens: rng.int(20, 400),
    strategy: rng.pick(["sliding_window", "priority"]),
    reserveTokens: 0,
    maxMessages: null,
    priorities: messages.map(() => rng.int(0, 3)),
    pinned: [],
    estimator: DEFAULT_ESTIMATOR,
  };
  return { id: `broken-${String(n).padStart(4, "0")}-${mutation}`, input: { messages, options } };
}

/** The reference's answer; thrown errors become the objects Python's runner returns. */
function expectedOf(ref, input) {
  try {
    return ref.trim(structuredClone(input.messages), input.options);
  } catch (error) {
    if (error instanceof ref.InvalidMessageError) return { error: "invalid_message", index: error.index };
    if (error instanceof ref.ConfigurationError) return { error: "configuration" };
    throw error;
  }
}

// ---------------------------------------------------------------- provider rules
/**
 * A random case with `provider` set. The budget is picked without the provider (pickBudget), so
 * it often lands on a boundary of the plain strategy, where the newest-exchange protection and
 * the provider's rules change the answer.
 */
function providerCase(rng, ref, provider, strategy, n) {
  const c = randomCase(rng, ref, strategy, n);
  c.id = `${provider}-${c.id}`;
  c.input.options.provider = provider;
  return c;
}

/** Small histories where each rule decides the answer (7 tokens a message, priming 3). */
function providerEdgeCases(ref) {
  const sys = { role: "system", content: "You are terse." }; // 7 tokens
  const u = (t) => ({ role: "user", content: t.padEnd(14, ".") }); // 7 tokens
  const a = (t) => ({ role: "assistant", content: t.padEnd(14, ".") }); // 7 tokens
  const callA = { role: "assistant", content: [{ type: "tool_use", id: "t1", name: "run", input: {} }] };
  const resultA = { role: "user", content: [{ type: "tool_result", tool_use_id: "t1", content: "ok" }] };
  const callO = { role: "assistant", content: null, tool_calls: [call("c1", "run")] };
  const resultO = answers("c1", "ok");
  const opts = (provider, maxTokens, extra = {}) => ({
    maxTokens,
    strategy: "sliding_window",
    reserveTokens: 0,
    maxMessages: null,
    pinned: [],
    estimator: DEFAULT_ESTIMATOR,
    provider,
    ...extra,
  });
  const agentLoop = [sys, u("question"), a("on it"), callA, resultA];
  const openaiLoop = [sys, u("question"), a("on it"), callO, resultO];
  // Everything the history costs (priming, system prompt, every group).
  const total = (messages) => {
    const conv = ref.readConversation(messages, {});
    return conv.estimator.promptOverhead + conv.systemTokens + conv.groups.reduce((sum, g) => sum + g.tokens, 0);
  };
  const chat = [sys, u("one"), a("two"), u("three"), a("four"), u("five")];
  // A tool loop whose latest user turn rides on a result (tool_result + text), with a result
  // larger than the budget before it: only the turn the loop started from is protected with it.
  const useOf = (id) => ({ role: "assistant", content: [{ type: "tool_use", id, name: "read", input: {} }] });
  const resultOf = (id, text, words = null) => ({
    role: "user",
    content: [{ type: "tool_result", tool_use_id: id, content: text }, ...(words ? [{ type: "text", text: words }] : [])],
  });
  const bigLoop = [sys, u("read them"), useOf("r1"), resultOf("r1", "x".repeat(2000)), useOf("r2"), resultOf("r2", "ok", "also, hurry")];
  const bigThenSmall = [...bigLoop.slice(0, 4), useOf("r3"), resultOf("r3", "ok"), useOf("r2"), resultOf("r2", "ok", "also, hurry")];
  const cases = [];
  for (const provider of [...PROVIDER_NAMES, null]) {
    const tag = provider ?? "none";
    cases.push(
      [`${tag}-assistant-first-after-cut`, [sys, u("one"), a("two"), a("three"), u("four"), a("five")], opts(provider, 3 + 7 + 7 * 3)],
      [`${tag}-gap-brings-users-together`, chat, opts(provider, 3 + 7 + 7 * 3, { strategy: "priority", priorities: [0, 3, 0, 3, 0, 0] })],
      [`${tag}-newest-exchange-beyond-max-messages`, agentLoop, opts(provider, 1000, { maxMessages: 1 })],
      [`${tag}-newest-exchange-overflow`, agentLoop, opts(provider, 3 + 7 + 7 + 6)],
      [`${tag}-priority-keeps-anthropic-exchange`, agentLoop, opts(provider, total(agentLoop) - 1, { strategy: "priority", priorities: [0, 0, 3, 0, 0] })],
      [`${tag}-priority-keeps-openai-exchange`, openaiLoop, opts(provider, total(openaiLoop) - 1, { strategy: "priority", priorities: [0, 0, 3, 0, 0] })],
      [`${tag}-pinned-assistant-first`, [sys, a("pinned note"), u("one"), a("two"), u("three")], opts(provider, 3 + 7 + 7 + 7, { pinned: [1] })],
      [`${tag}-oversized-result-in-tool-loop`, bigLoop, opts(provider, 120)],
      [`${tag}-oversized-result-then-small-ones`, bigThenSmall, opts(provider, 160)],
      [`${tag}-pinned-system-before-riding-turn`, [sys, u("start"), { role: "system", content: "Reminder: be terse." }, ...bigLoop.slice(2)], opts(provider, 130, { pinned: [2] })],
    );
  }
  cases.push(
    ["unknown-provider", [sys, u("one")], opts("azure", 100)],
    ["provider-not-a-string", [sys, u("one")], opts(7, 100)],
  );
  return cases.map(([name, messages, options]) => ({
    id: `edge-${name}`,
    input: { messages, options: { ...options, priorities: options.priorities ?? messages.map(() => 0) } },
  }));
}

// ---------------------------------------------------------------- suites
export async function generate(_outDir, writeSuite) {
  const ref = await tsImport(REFERENCE, import.meta.url);
  const packageName = `${ref.REFERENCE_PACKAGE}@${ref.REFERENCE_VERSION}`;
  for (const strategy of ["sliding_window", "priority"]) {
    const rng = makeRng(SEEDS[strategy]);
    const cases = edgeCases(ref, strategy);
    for (let n = 0; n < RANDOM_CASES; n += 1) cases.push(randomCase(rng, ref, strategy, n));
    for (const c of cases) {
      // The reference sees a deep copy: whatever it does, the fixture holds the caller's input.
      c.expected = ref.trim(structuredClone(c.input.messages), c.input.options);
    }
    writeSuite({
      suite: `reference.trim.${strategy}`,
      package: packageName,
      function: "trim",
      description:
        "Kept message indices (system prompt first, then original order) or {error:'overflow', required, budget}; " +
        "chars/estimator settings in options.estimator. Source: compat_fixtures/reference/trim.ts.",
      seed: SEEDS[strategy],
      cases,
    });
  }

  const providerRng = makeRng(SEEDS.providers);
  const providerCases = providerEdgeCases(ref);
  for (const provider of PROVIDER_NAMES) {
    for (const strategy of ["sliding_window", "priority"]) {
      for (let n = 0; n < PROVIDER_CASES; n += 1) providerCases.push(providerCase(providerRng, ref, provider, strategy, n));
    }
  }
  for (const c of providerCases) c.expected = expectedOf(ref, c.input);
  writeSuite({
    suite: "reference.trim.providers",
    package: packageName,
    function: "trim",
    description:
      "Random conversations trimmed with options.provider set (openai, openai-responses, anthropic, bedrock, " +
      "gemini): the newest exchange protected and the provider's rules kept by dropping groups. Kept indices, " +
      "{error:'overflow', required, budget} or {error:'configuration'}. Source: compat_fixtures/reference/trim.ts " +
      "and reference/providers.ts.",
    seed: SEEDS.providers,
    cases: providerCases,
  });

  const rng = makeRng(SEEDS.invalid);
  const cases = invalidCases();
  for (let n = 0; n < BROKEN_CASES; n += 1) cases.push(brokenCase(rng, n));
  for (const c of cases) c.expected = expectedOf(ref, c.input);
  writeSuite({
    suite: "reference.trim.invalid",
    package: packageName,
    function: "trim",
    description:
      "Broken tool-call protocol, malformed messages and bad options: {error:'invalid_message', index} " +
      "(index of the first offending message), {error:'configuration'}, or kept indices when a mutation " +
      "left the history valid. Source: compat_fixtures/reference/trim.ts.",
    seed: SEEDS.invalid,
    cases,
  });
}
