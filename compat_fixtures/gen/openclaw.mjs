// Parity fixtures for OpenClaw's session pruning (pruneExpiredCacheTtlToolResults), run from the
// REAL published code. The pruner is not exported (it lives in the bundled worker), so this
// generator reads the pinned package's dist/worker/worker.mjs, takes the named functions out of
// it verbatim, and evaluates them together with tiny shims for the projection bookkeeping
// (a fresh session: no earlier projections, TTL expired). The package is fetched with
// `npm pack openclaw@VERSION` into compat_fixtures/.openclaw/ when missing (tarball only).
//
// Text is kept free of CJK: OpenClaw weights CJK characters when estimating chars, which this
// project does not reproduce (documented in docs/pruning.md).
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { makeRng } from "../lib/rng.mjs";

const VERSION = "2026.9.6";
// The registry's dist.integrity for that version: a re-published or tampered tarball fails here.
const INTEGRITY = "sha512-Ie0kyQSCVfFqixsgVg39vevUDq01Ch5u3+7Yu5Y3qARczmdAe+lzp8bVnO9925rHiW/+CFp70zfORCyPmCH31g==";
const here = dirname(fileURLToPath(import.meta.url));
const cache = join(here, "..", ".openclaw");

function packageDir() {
  const dir = join(cache, "package");
  let tgz = existsSync(cache) ? readdirSync(cache).find((f) => f.endsWith(".tgz")) : undefined;
  if (!tgz) {
    mkdirSync(cache, { recursive: true });
    execFileSync("npm", ["pack", `openclaw@${VERSION}`, "--silent"], { cwd: cache });
    tgz = readdirSync(cache).find((f) => f.endsWith(".tgz"));
  }
  const digest = "sha512-" + createHash("sha512").update(readFileSync(join(cache, tgz))).digest("base64");
  if (digest !== INTEGRITY) {
    throw new Error(`openclaw: ${tgz} does not match the pinned integrity of openclaw@${VERSION}`);
  }
  if (!existsSync(join(dir, "package.json"))) execFileSync("tar", ["xzf", tgz], { cwd: cache });
  return dir;
}

function extract(src, name) {
  const i = src.indexOf(`function ${name}(`);
  if (i < 0) throw new Error(`openclaw: function ${name} not found in the bundle`);
  let depth = 0;
  for (let k = src.indexOf("{", i); k < src.length; k++) {
    if (src[k] === "{") depth++;
    else if (src[k] === "}" && --depth === 0) return src.slice(i, k + 1);
  }
  throw new Error(`openclaw: unbalanced ${name}`);
}

function constant(src, name) {
  const m = src.match(new RegExp(name.replace("$", "\\$") + "=(`[^`]*`|[^,;)]+)"));
  if (!m) throw new Error(`openclaw: constant ${name} not found`);
  return `const ${name}=${m[1]};`;
}

function loadPruner() {
  const dir = packageDir();
  const pkg = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  const src = readFileSync(join(dir, "dist", "worker", "worker.mjs"), "latin1");
  const names = [
    "pruneExpiredCacheTtlToolResults", "softPruneCacheTtlToolResult", "resolveCacheTtlPruningSettings",
    "cacheTtlMessageChars", "cacheTtlText", "dropThinkingBlocks", "sliceUtf16Safe",
    "compileGlobPatterns", "compileGlobPattern", "matchesAnyGlobPattern", "normalizeLowercaseStringOrEmpty",
    "normalizeOptionalLowercaseString", "normalizeOptionalString", "normalizeNullableString",
    "isRecord$2", "isAssistantMessageWithContent", "isThinkingBlock", "buildOmittedAssistantReasoningContent",
    "isLowSurrogate", "isHighSurrogate", "escapeRegex$2", "buildToolResultPlanningBranch",
  ];
  const consts = ["CACHE_TTL_IMAGE_CHARS", "CACHE_TTL_IMAGE_MARKER", "CACHE_TTL_DEFAULT_PLACEHOLDER",
    "OMITTED_ASSISTANT_REASONING_TEXT"];
  const body = [
    ...consts.map((c) => constant(src, c)),
    ...names.map((n) => extract(src, n)),
    // Shims: a fresh projection state (nothing projected before), ASCII/non-CJK char estimate.
    "const TOOL_RESULT_PROJECTION_KEY=Symbol('k');",
    "function estimateStringChars$1(s){return s.length}",
    "function parseDurationMs$1(){return 300000}",
    "function recordToolResultPromptProjection(){}",
    "function projectToolResultBranch(o){return {keys:[],branch:o.branch}}",
    "return {prune: pruneExpiredCacheTtlToolResults, settings: resolveCacheTtlPruningSettings};",
  ].join("\n");
  return { pkg: `${pkg.name}@${pkg.version}`, ...new Function(body)() };
}

const TOOLS = ["read", "exec", "grep", "web_fetch", "browser", "memory_search"];
const SPICE = ["😀", "e\u0301", "ß", "Ωμέγα", "\t", "\n", '"q"', "\\", "\u00a0", "👍🏽"];

function text(r, n) {
  let out = "";
  while (out.length < n) out += r.chance(0.05) ? r.pick(SPICE) : r.pick(["line ", "data ", "x", "0123456789", "\n"]);
  return out;
}

function agentLoop(r) {
  // One request, a long tool loop of mid-size results: exercises the hard clear.
  const messages = [{ role: "user", content: text(r, r.int(10, 100)) }];
  for (let k = r.int(20, 40); k > 0; k--) {
    const id = `loop_${k}`;
    const tool = r.pick(TOOLS);
    messages.push({ role: "assistant", content: [{ type: "toolCall", id, name: tool, arguments: {} }] });
    messages.push({ role: "toolResult", toolCallId: id, toolName: tool, content: [{ type: "text", text: text(r, r.int(1000, 3900)) }] });
  }
  messages.push({ role: "assistant", content: [{ type: "text", text: "done" }] });
  return messages;
}

function session(r) {
  const messages = [];
  if (r.chance(0.5)) {
    messages.push({ role: "assistant", content: [{ type: "toolCall", id: "boot", name: "read", arguments: { path: "SOUL.md" } }] });
    messages.push({ role: "toolResult", toolCallId: "boot", toolName: "read", content: [{ type: "text", text: text(r, r.int(100, 9000)) }] });
  }
  const turns = r.int(1, 5);
  let n = 0;
  for (let t = 0; t < turns; t++) {
    messages.push({ role: "user", content: r.chance(0.5) ? text(r, r.int(5, 200)) : [{ type: "text", text: text(r, 50) }] });
    for (let k = r.int(0, 4); k > 0; k--) {
      const id = `call_${n++}`;
      const tool = r.pick(TOOLS);
      const content = [];
      if (r.chance(0.15)) content.push({ type: "thinking", thinking: text(r, r.int(10, 400)) });
      content.push({ type: "toolCall", id, name: tool, arguments: { q: text(r, r.int(1, 60)) } });
      messages.push({ role: "assistant", content });
      const parts = [{ type: "text", text: text(r, r.pick([200, 3999, 4000, 4001, 6000, 12000, 20000])) }];
      if (r.chance(0.15)) parts.push({ type: "image", data: "AAAA", mimeType: "image/png" });
      if (r.chance(0.1)) parts.push({ type: "text", text: text(r, r.int(1, 3000)) });
      messages.push({ role: "toolResult", toolCallId: id, toolName: tool, content: parts });
    }
    messages.push({ role: "assistant", content: [{ type: "text", text: text(r, r.int(5, 300)) }] });
  }
  return messages;
}

export async function generate(outDir, writeSuite) {
  const { pkg, prune, settings } = loadPruner();
  const r = makeRng(20260906);
  const cases = [];
  const configs = [
    { mode: "cache-ttl" },
    { mode: "cache-ttl", tools: { deny: ["exec", "web_*"] } },
    { mode: "cache-ttl", tools: { allow: ["read", "GREP"], deny: ["grep"] } },
    { mode: "cache-ttl", hardClear: { enabled: false } },
    { mode: "cache-ttl", hardClear: { placeholder: "  [gone]  " } },
  ];
  for (let i = 0; i < 100; i++) {
    const messages = i % 4 === 3 ? agentLoop(r) : session(r);
    const config = r.pick(configs);
    const contextWindowTokens = r.pick([4000, 8000, 16000, 32000, 64000]);
    const out = prune({
      messages, settings: settings(config), projectionState: { frozen: new Set(), replacements: new Map(), sourceHashByKey: new Map() },
      pruneNewRounds: true, lastCacheTouchAt: 1, now: 1e9, contextWindowTokens,
    });
    // Expected as a diff (index -> pruned message) to keep the file small; same length always.
    const changed = {};
    out.forEach((m, k) => { if (m !== messages[k]) changed[k] = m; });
    cases.push({ id: `session-${i}`, input: { messages, config, contextWindowTokens }, expected: { length: out.length, changed } });
  }
  writeSuite({
    suite: "openclaw.sessionPruning",
    package: pkg,
    function: "pruneExpiredCacheTtlToolResults",
    notes: "input: OpenClaw agent messages, contextPruning config, window; expected: {length, changed: {index: pruned message}} (fresh session, TTL expired). Extracted verbatim from dist/worker/worker.mjs; CJK-free text.",
    seed: 20260906,
    cases,
  });
}
