// Fixtures for LangChain.js `trimMessages` (@langchain/core 1.4.0).
//
// Seeded conversations (OpenAI-style dicts) are converted to LangChain message objects with the
// library's own classes and trimmed by the real `trimMessages`, counting tokens with "chars4"
// (see chars4Tokens; the same counter lives in context_manager/interop/langchain_counting.py).
// Every case is also run through LangChain PYTHON (langchain_reference.py, needs python3 with
// langchain-core): cases where JS and Python agree form the suite `langchain.trimMessages`;
// cases where they disagree are listed, with both answers, in langchain.trimMessages.jsOnly.json
// (not a suite: our Python follows LangChain Python there, see README.md, "LangChain trim_messages parity").
//
// A result is encoded as the kept messages in order: {index} (the caller's message, unchanged)
// or {index, content} (a cut-down copy, allowPartial). JS's `undefined` entries become null.
import { spawnSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  AIMessage,
  HumanMessage,
  SystemMessage,
  ToolMessage,
  trimMessages,
} from "@langchain/core/messages";
import { makeRng } from "../lib/rng.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const PACKAGE = "@langchain/core@1.4.0";
const SEED = 20261121;
const RANDOM_CASES = 1200;


// ---------------------------------------------------------------- the deterministic counter
/** ceil(UTF-16 units / 4) + 3 + 85 per image part; units = text, name, tool calls, tool_call_id. */
function chars4Tokens(message) {
  let units = 0;
  let images = 0;
  const content = message.content;
  if (typeof content === "string") units += content.length;
  else {
    for (const block of content) {
      if (block && typeof block === "object" && block.type === "text") units += (block.text || "").length;
      else if (block && typeof block === "object" && (block.type === "image_url" || block.type === "image")) images += 1;
    }
  }
  if (typeof message.name === "string") units += message.name.length;
  if (typeof message.tool_call_id === "string") units += message.tool_call_id.length;
  for (const call of message.tool_calls ?? []) {
    units += (call.id ?? "").length + call.name.length + JSON.stringify(call.args).length;
  }
  return Math.ceil(units / 4) + 3 + 85 * images;
}
const chars4Counter = async (messages) => messages.reduce((sum, m) => sum + chars4Tokens(m), 0);

/** Same counter on an OpenAI dict (used only to place budgets on exact boundaries). */
function chars4OfDict(dict) {
  return chars4Tokens(toLangChain(dict, 0));
}

const SPLITTERS = {
  newline: null, // LangChain's default splitter
  space: (text) => {
    const pieces = text.split(" ");
    return [...pieces.slice(0, -1).map((p) => `${p} `), pieces[pieces.length - 1]];
  },
};

// ---------------------------------------------------------------- OpenAI dict -> LangChain
function toLangChain(dict, index) {
  const fields = { content: dict.content ?? "", id: `m${index}` };
  if (dict.name !== undefined) fields.name = dict.name;
  switch (dict.role) {
    case "system":
      return new SystemMessage(fields);
    case "user":
      return new HumanMessage(fields);
    case "assistant":
      return new AIMessage({
        ...fields,
        tool_calls: (dict.tool_calls ?? []).map((call) => ({
          id: call.id,
          name: call.function.name,
          args: JSON.parse(call.function.arguments),
          type: "tool_call",
        })),
      });
    case "tool":
      return new ToolMessage({ ...fields, tool_call_id: dict.tool_call_id });
    default:
      throw new Error(`unexpected role ${dict.role}`);
  }
}

const LC_TYPE = { user: "human", assistant: "ai", human: "human", ai: "ai", system: "system", tool: "tool" };
const toLcTypes = (value) =>
  value == null ? undefined : Array.isArray(value) ? value.map((v) => LC_TYPE[v]) : LC_TYPE[value];

async function runJs(input) {
  const lcMessages = input.messages.map(toLangChain);
  const originals = input.messages.map(toLangChain);
  const options = {
    maxTokens: input.max_tokens,
    tokenCounter: chars4Counter,
    strategy: input.strategy,
    allowPartial: input.allow_partial,
    includeSystem: input.include_system,
  };
  if (input.start_on != null) options.startOn = toLcTypes(input.start_on);
  if (input.end_on != null) options.endOn = toLcTypes(input.end_on);
  if (SPLITTERS[input.splitter]) options.textSplitter = SPLITTERS[input.splitter];
  let kept;
  try {
    kept = await trimMessages(lcMessages, options);
  } catch {
    return { error: "invalid_options" };
  }
  return kept.map((message) => {
    if (message === undefined) return null;
    const index = Number(message.id.slice(1));
    const entry = { index };
    if (JSON.stringify(message.content) !== JSON.stringify(originals[index].content)) {
      entry.content = message.content;
    }
    return entry;
  });
}

// ---------------------------------------------------------------- conversations
const WORDS = [
  "the", "budget", "token", "context", "window", "trim", "message", "tool", "result", "ok",
  "naïve", "café", "Zürich", "日本語", "中文字符", "한국어", "😀", "🚀✨", "👩‍💻", "e\u0301", "n\u0303",
  "Ω≈ç√", "x", "42", "3.14", "{json}", "\"quoted\"", "back\\slash", "tab\tbed",
];

function sentence(rng, lo, hi) {
  const count = rng.int(lo, hi);
  const words = [];
  for (let i = 0; i < count; i += 1) words.push(rng.pick(WORDS));
  return words.join(" ");
}

function text(rng) {
  const roll = rng.next();
  if (roll < 0.06) return "";
  if (roll < 0.55) return sentence(rng, 1, 10);
  if (roll < 0.92) {
    const lines = [];
    const count = rng.int(2, 5);
    for (let i = 0; i < count; i += 1) lines.push(sentence(rng, 0, 6));
    return lines.join("\n") + (rng.chance(0.2) ? "\n" : "");
  }
  const lines = [];
  const count = rng.int(6, 14);
  for (let i = 0; i < count; i += 1) lines.push(sentence(rng, 3, 10));
  return lines.join(rng.chance(0.7) ? "\n" : " ");
}

const IMAGE = { type: "image_url", image_url: { url: "data:image/png;base64,iVBORw0KGgo=" } };

function parts(rng) {
  const count = rng.int(1, 4);
  const out = [];
  for (let i = 0; i < count; i += 1) {
    if (rng.chance(0.7)) out.push({ type: "text", text: text(rng) });
    else out.push(rng.chance(0.5) ? IMAGE : { type: "image_url", image_url: { url: "https://example.com/cat.png", detail: "low" } });
  }
  return out;
}

function content(rng, allowParts) {
  return allowParts && rng.chance(0.22) ? parts(rng) : text(rng);
}

function toolCall(rng, n) {
  const args = rng.pick([
    { query: sentence(rng, 1, 5) },
    { path: "src/main.py", line: rng.int(1, 400) },
    { items: [1, 2.5, "three", null, true], nested: { deep: sentence(rng, 0, 3) } },
    {},
  ]);
  return {
    id: `call_${n}`,
    type: "function",
    function: { name: rng.pick(["search", "read_file", "run", "ƒetch"]), arguments: JSON.stringify(args) },
  };
}

function conversation(rng) {
  const messages = [];
  let calls = 0;
  if (rng.chance(0.65)) messages.push({ role: "system", content: content(rng, true) || "You are terse." });
  const turns = rng.int(0, 5);
  for (let t = 0; t < turns; t += 1) {
    const user = { role: "user", content: content(rng, true) };
    if (rng.chance(0.12)) user.name = rng.pick(["alice", "bob_2", "Zoë"]);
    messages.push(user);
    const steps = rng.int(0, 2);
    for (let s = 0; s < steps; s += 1) {
      const parallel = rng.chance(0.6) ? rng.int(1, 3) : 0;
      const assistant = { role: "assistant", content: parallel && rng.chance(0.5) ? null : content(rng, true) };
      if (parallel) {
        assistant.tool_calls = [];
        for (let p = 0; p < parallel; p += 1) assistant.tool_calls.push(toolCall(rng, (calls += 1)));
      }
      if (rng.chance(0.08)) assistant.name = "helper";
      messages.push(assistant);
      for (const call of assistant.tool_calls ?? []) {
        messages.push({ role: "tool", content: content(rng, false) || "done", tool_call_id: call.id });
      }
    }
    if (rng.chance(0.1)) messages.push({ role: "system", content: sentence(rng, 1, 6) });
  }
  return messages;
}

// ---------------------------------------------------------------- options and budgets
const TYPE_CHOICES = ["human", "ai", "tool", "system", "user", "assistant", ["human", "ai"], ["human", "tool"], ["user"]];

function budgets(rng, messages, input) {
  const costs = messages.map(chars4OfDict);
  const total = costs.reduce((a, b) => a + b, 0);
  const edges = [0];
  const order = input.strategy === "first" ? costs : [...costs].reverse();
  let running = 0;
  for (const cost of order) edges.push((running += cost));
  if (input.include_system && messages[0]?.role === "system") {
    running = costs[0];
    edges.push(running);
    for (const cost of costs.slice(1).reverse()) edges.push((running += cost));
  }
  const roll = rng.next();
  if (roll < 0.3) return rng.pick(edges) + rng.pick([-1, 0, 0, 1]);
  if (roll < 0.55) return rng.pick(edges) + rng.int(2, 40); // lands inside the next message
  if (roll < 0.63) return total + rng.int(0, 20);
  if (roll < 0.66) return rng.int(0, 5);
  return rng.int(0, Math.max(1, total));
}

function randomInput(rng) {
  const messages = conversation(rng);
  const strategy = rng.chance(0.7) ? "last" : "first";
  const input = {
    messages,
    max_tokens: 0,
    counter: "chars4",
    strategy,
    allow_partial: rng.chance(0.45),
    include_system: strategy === "last" ? rng.chance(0.5) : rng.chance(0.02),
    start_on: strategy === "last" && rng.chance(0.4) ? rng.pick(TYPE_CHOICES) : strategy === "first" && rng.chance(0.02) ? "human" : null,
    end_on: rng.chance(0.3) ? rng.pick(TYPE_CHOICES) : null,
    splitter: rng.chance(0.8) ? "newline" : "space",
  };
  input.max_tokens = budgets(rng, messages, input);
  return input;
}

function base(messages, overrides) {
  return {
    messages, max_tokens: 0, counter: "chars4", strategy: "last", allow_partial: false,
    include_system: false, start_on: null, end_on: null, splitter: "newline", ...overrides,
  };
}

/** Hand-picked edge cases; budgets come from the counter, never typed in. */
function edgeInputs() {
  const chat = [
    { role: "system", content: "You are a careful assistant. Answer briefly and cite tools." },
    { role: "user", content: "What is the weather in Zürich? 😀" },
    { role: "assistant", content: null, tool_calls: [
      { id: "call_a", type: "function", function: { name: "weather", arguments: JSON.stringify({ city: "Zürich" }) } },
      { id: "call_b", type: "function", function: { name: "time", arguments: JSON.stringify({ tz: "Europe/Zurich" }) } },
    ] },
    { role: "tool", content: "12°C, cloudy", tool_call_id: "call_a" },
    { role: "tool", content: "14:05", tool_call_id: "call_b" },
    { role: "assistant", content: "It is 12°C and cloudy at 14:05.\nAnything else?" },
    { role: "user", content: [{ type: "text", text: "Describe this:\nfirst line\nsecond line" }, IMAGE, { type: "text", text: "and this one" }] },
  ];
  const costs = chat.map(chars4OfDict);
  const total = costs.reduce((a, b) => a + b, 0);
  const lastTwo = costs[5] + costs[6];
  const out = [];
  const add = (id, input) => out.push({ id, input });
  for (const strategy of ["first", "last"]) {
    add(`edge/${strategy}/everything-fits`, base(chat, { strategy, max_tokens: total }));
    add(`edge/${strategy}/one-short-of-everything`, base(chat, { strategy, max_tokens: total - 1 }));
    add(`edge/${strategy}/nothing-fits`, base(chat, { strategy, max_tokens: 0 }));
    add(`edge/${strategy}/negative-budget`, base(chat, { strategy, max_tokens: -5 }));
    add(`edge/${strategy}/empty-conversation`, base([], { strategy, max_tokens: 10 }));
    for (const allow_partial of [false, true]) {
      add(`edge/${strategy}/partial=${allow_partial}/first-message-exactly`, base(chat, { strategy, allow_partial, max_tokens: costs[0] }));
      add(`edge/${strategy}/partial=${allow_partial}/last-two-exactly`, base(chat, { strategy, allow_partial, max_tokens: lastTwo }));
      add(`edge/${strategy}/partial=${allow_partial}/last-two-plus-one`, base(chat, { strategy, allow_partial, max_tokens: lastTwo + 1 }));
      add(`edge/${strategy}/partial=${allow_partial}/last-two-minus-one`, base(chat, { strategy, allow_partial, max_tokens: lastTwo - 1 }));
    }
  }
  add("edge/last/system-alone-fits-exactly", base(chat, { include_system: true, max_tokens: costs[0] }));
  add("edge/last/system-alone-over-budget", base(chat, { include_system: true, max_tokens: costs[0] - 1 }));
  add("edge/last/system-only-conversation-over-budget", base(chat.slice(0, 1), { include_system: true, max_tokens: 1 }));
  add("edge/last/system-plus-last-exactly", base(chat, { include_system: true, max_tokens: costs[0] + costs[6] }));
  add("edge/last/system-plus-last-start-on-human", base(chat, { include_system: true, start_on: "human", max_tokens: costs[0] + lastTwo }));
  add("edge/last/start-on-never-met", base(chat, { start_on: "tool", max_tokens: lastTwo }));
  add("edge/last/start-on-never-met-with-system", base(chat, { include_system: true, start_on: "tool", max_tokens: costs[0] + lastTwo }));
  add("edge/last/end-on-ai-drops-tail", base(chat, { end_on: "ai", max_tokens: total }));
  add("edge/last/end-on-never-met", base(chat, { end_on: ["system"], max_tokens: total }));
  add("edge/first/end-on-tool", base(chat, { strategy: "first", end_on: "tool", max_tokens: total - costs[6] }));
  add("edge/first/start-on-is-an-error", base(chat, { strategy: "first", start_on: "human", max_tokens: total }));
  add("edge/first/include-system-is-an-error", base(chat, { strategy: "first", include_system: true, max_tokens: total }));
  add("edge/last/orphaned-tool-results", base(chat.slice(0, 5), { max_tokens: costs[3] + costs[4] }));
  const long = { role: "user", content: Array.from({ length: 12 }, (_, i) => `line ${i} 日本語 😀`).join("\n") };
  const longCost = chars4OfDict(long);
  for (const strategy of ["first", "last"]) {
    for (let budget = 0; budget <= longCost; budget += 7) {
      add(`edge/${strategy}/partial-text/budget=${budget}`, base([long], { strategy, allow_partial: true, max_tokens: budget }));
    }
  }
  return out;
}

// ---------------------------------------------------------------- LangChain Python reference
function runPython(cases) {
  const script = join(here, "langchain_reference.py");
  const run = spawnSync(process.env.PYTHON ?? "python3", [script], {
    input: JSON.stringify(cases.map((c) => c.input)),
    encoding: "utf-8",
    maxBuffer: 1 << 28,
  });
  if (run.status !== 0) {
    throw new Error(`langchain_reference.py failed (needs python3 + langchain-core):\n${run.stderr}`);
  }
  return JSON.parse(run.stdout);
}

function divergenceKind(input, js, py) {
  const leadingSystem = input.include_system && input.messages[0]?.role === "system";
  const systemOver = leadingSystem && chars4OfDict(input.messages[0]) > input.max_tokens;
  if (Array.isArray(js) && js.includes(null)) {
    return systemOver
      ? "include_system, system alone over budget: JS returns [undefined]"
      : "include_system + start_on not met: JS returns [undefined]";
  }
  if (systemOver && Array.isArray(js) && js[0]?.index === 0 && "content" in js[0]) {
    return "include_system, system alone over budget: JS cuts the system message";
  }
  if (Array.isArray(js) && new Set(js.map((e) => e.index)).size !== js.length) {
    return "allow_partial: JS repeats the cut message";
  }
  const cut = (result) => (Array.isArray(result) ? result.find((e) => "content" in e) : undefined);
  const jsCut = cut(js);
  const pyCut = cut(py);
  if (input.allow_partial && (Array.isArray(jsCut?.content) || Array.isArray(pyCut?.content))) {
    return "allow_partial: different content blocks kept";
  }
  if (input.allow_partial) return "allow_partial: different text cut";
  return "other";
}

export async function generate(outDir, writeSuite) {
  const rng = makeRng(SEED);
  const all = edgeInputs();
  for (let i = 0; i < RANDOM_CASES; i += 1) {
    all.push({ id: `random/${String(i).padStart(4, "0")}`, input: randomInput(rng) });
  }
  for (const entry of all) entry.js = await runJs(entry.input);
  const reference = runPython(all);
  const agreed = [];
  const divergences = [];
  all.forEach((entry, i) => {
    const py = reference.results[i];
    if (JSON.stringify(py) === JSON.stringify(entry.js)) {
      agreed.push({ id: entry.id, input: entry.input, expected: entry.js });
    } else {
      divergences.push({
        id: entry.id,
        kind: divergenceKind(entry.input, entry.js, py),
        input: entry.input,
        js: entry.js,
        python: py,
      });
    }
  });
  writeSuite({
    suite: "langchain.trimMessages",
    package: PACKAGE,
    function: "trimMessages",
    counter: "chars4: ceil(UTF-16 units / 4) + 3 + 85 per image part",
    python_reference: reference.package,
    seed: SEED,
    cases: agreed,
  });
  const kinds = {};
  for (const d of divergences) kinds[d.kind] = (kinds[d.kind] ?? 0) + 1;
  const file = join(outDir, "langchain.trimMessages.jsOnly.json");
  const listing = {
    about: "Cases where LangChain.js and LangChain Python disagree; context_manager follows Python.",
    package: PACKAGE,
    python_reference: reference.package,
    function: "trimMessages",
    seed: SEED,
    kinds,
    divergences,
  };
  writeFileSync(file, JSON.stringify(listing, null, 1) + "\n");
  console.log(`langchain.trimMessages.jsOnly: ${divergences.length} divergences -> ${file}`);
}
