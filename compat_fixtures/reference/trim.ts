// context-manager-reference 0.1.0: the trimming rules of context_manager, stated in TypeScript.
//
// `trim(messages, options)` answers the question Python's `context_manager.trim()` answers: which
// of these messages do we send so the prompt fits the token budget? It returns the indices of
// the messages to keep, in order, or an overflow object when even the parts that must be sent
// cannot fit. Python must return exactly the same answer on every input (see
// compat_fixtures/fixtures/reference.trim.*.json and context_manager/parity/reference.py).
//
// The code is written to be read, not to be fast: plain loops, every total recomputed. (The
// Python library keeps prefix sums so the same answer costs O(log n); the answer is the same.)
//
// The rules, in the order the code applies them:
//
//  1. Counting. Every message is counted once with the chars/4 estimator (estimate.ts); the
//     prompt adds promptOverhead once.
//  2. System prompt. The FIRST message, when its role is "system" or "developer", is the system
//     prompt: always sent, never a candidate for dropping. Later system messages are ordinary.
//  3. Tool groups. An assistant message with tool calls, together with the messages that carry
//     its results (OpenAI "tool" messages, Anthropic user messages with tool_result blocks), is
//     one group, kept or dropped as a whole. Every other message is a group of its own. A group
//     still waiting for results at the end of the list is not sent (its calls cannot be answered
//     yet). Messages must follow the tool-call protocol (see `buildGroups`).
//  4. Pins. `pinned` lists message indices that are always sent; pinning any member pins its
//     whole group. Pinned groups cost budget but are never dropped.
//  5. Latest user message. The group holding the last message the person wrote is always
//     sent (unless it is pinned, which already keeps it, or still waiting for results, which
//     means there is nothing to protect). That is the last message whose role is "user" and
//     which has text of its own or carries no tool results: an Anthropic user message that only
//     carries tool results answers the assistant, it is not the user's request.
//  6. Overflow. If promptOverhead + system prompt + pinned groups + the latest user group exceed
//     the budget (maxTokens - reserveTokens), nothing sensible can be sent: the result is
//     { error: "overflow", required, budget } (Python raises ContextOverflowError(required, budget)).
//  7. Strategy. What is left of the budget ("room") goes to the other groups:
//     - "sliding_window": the longest run of most recent groups that fits (and, with maxMessages,
//       holds at most that many messages); if the latest user group is older than that run, it is
//       kept and the run after it shrinks to fit the room (and message cap) that remain.
//     - "priority": drop the lowest priority first, oldest first among equals, until the rest
//       fits. A group's priority is the highest of its members'.
//  8. Provider. With `provider` set, the newest complete group is protected like the latest
//     user group (it joins the overflow check; if the strategy leaves it out, the strategy runs
//     again with its tokens set aside and it is added), and the provider's rules then drop groups
//     whose position the API would reject (see providers.ts). Under a provider whose context
//     opens with a user turn (firstUser), the latest user group can open with the assistant (a
//     tool call whose results carry the person's words); then the nearest group before it that
//     opens with a user turn (the "lead group") is protected too, the same way and settled
//     first, unless a pinned group that opens with a user turn comes before it (the pin opens
//     the context; a pinned system message does not). Only the lead group: the groups between
//     it and the latest user group are kept or dropped by the strategy like any other. The lead group is covered when the strategy keeps it, or a group
//     before it that opens with a user turn.
//  9. Output. System prompt first, then every kept message in its original order; for Bedrock,
//     neighbouring plain turns of one role joined (an array of their indices; providers.ts C).

import { countMessage, makeEstimator, type Estimator, type EstimatorOptions } from "./estimate.ts";
import { ConfigurationError, InvalidMessageError } from "./errors.ts";
import { normalize, resultIds, type MessageRecord } from "./messages.ts";
import { applyProviderRules, joinTurns, providerRules, type ProviderName } from "./providers.ts";

export { ConfigurationError, InvalidMessageError } from "./errors.ts";
export type { EstimatorOptions } from "./estimate.ts";
export { PROVIDERS, type ProviderName } from "./providers.ts";

export const REFERENCE_PACKAGE = "context-manager-reference";
export const REFERENCE_VERSION = "0.1.0";

export type StrategyName = "sliding_window" | "priority";

export interface TrimOptions {
  /** The context window in tokens (a positive integer). */
  maxTokens: number;
  /** "sliding_window" (default) or "priority". ("fifo" is accepted as "sliding_window".) */
  strategy?: StrategyName | "fifo";
  /** Tokens kept free for the reply: the budget is maxTokens - reserveTokens. Default 0. */
  reserveTokens?: number;
  /** sliding_window only: at most this many messages in the window (system prompt excluded). */
  maxMessages?: number | null;
  /** Priority of each message (same length as messages). Default: all 0. */
  priorities?: number[];
  /** Indices of messages that must always be sent. */
  pinned?: number[];
  /** The chars/4 estimator's settings (defaults: 4 chars per token, 3, 3, 85). */
  estimator?: EstimatorOptions;
  /** The API the context is for (providers.ts); null/undefined: no provider rules. */
  provider?: ProviderName | null;
}

/** The pinned part plus the latest user group need `required` tokens; the budget is smaller. */
export interface Overflow {
  error: "overflow";
  required: number;
  budget: number;
}

export type TrimResult = (number | number[])[] | Overflow;

/** A run of messages kept or dropped together. */
export interface Group {
  /** Message indices, in order. */
  indices: number[];
  /** Sum of its messages' tokens. */
  tokens: number;
  /** True when any member is pinned. */
  pinned: boolean;
  /** The highest priority among its members. */
  priority: number;
  /** Ids of its tool calls still waiting for a result. */
  pending: string[];
  /** True when it holds the last user message of the conversation. */
  hasLatestUser: boolean;
  /** Role of its first message as a provider sees it ("tool" reads as "user"). */
  firstRole: string;
  /** Role of its last message, read the same way. */
  lastRole: string;
  /** Its first message is a user turn (see rule 5). */
  opensWithUserTurn: boolean;
}

/** What `trim` knows once the messages are read: the input to every strategy. */
export interface Conversation {
  systemIndex: number | null;
  systemTokens: number;
  /** Every group after the system prompt, including an open one at the end. */
  groups: Group[];
  estimator: Estimator;
}

function isNonNegativeInteger(value: unknown): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

function checkOptions(messages: unknown[], options: TrimOptions): void {
  if (!isNonNegativeInteger(options.maxTokens) || options.maxTokens === 0) {
    throw new ConfigurationError(`maxTokens must be a positive integer, got ${options.maxTokens}`);
  }
  const reserve = options.reserveTokens ?? 0;
  if (!isNonNegativeInteger(reserve) || reserve >= options.maxTokens) {
    throw new ConfigurationError(`reserveTokens must be in [0, maxTokens), got ${reserve}`);
  }
  const strategy = options.strategy ?? "sliding_window";
  if (!["sliding_window", "fifo", "priority"].includes(strategy)) {
    throw new ConfigurationError(`unknown strategy ${strategy}`);
  }
  const maxMessages = options.maxMessages ?? null;
  if (maxMessages !== null) {
    if (!isNonNegativeInteger(maxMessages)) {
      throw new ConfigurationError(`maxMessages must be >= 0, got ${maxMessages}`);
    }
    if (strategy === "priority") {
      throw new ConfigurationError("maxMessages applies to the sliding_window strategy only");
    }
  }
  if (options.priorities !== undefined && options.priorities.length !== messages.length) {
    throw new ConfigurationError("priorities must have one entry per message");
  }
  providerRules(options.provider); // throws on an unknown name
}

/** The role a provider sees: tool results travel in user turns outside OpenAI chat. */
function turnRole(record: MessageRecord): string {
  return record.role === "tool" ? "user" : record.role;
}

/** A user message the person wrote: with text of its own, or carrying no tool results. */
function isUserTurn(record: MessageRecord): boolean {
  return record.role === "user" && (record.text !== "" || record.toolResults.length === 0);
}

/**
 * Read the messages: find the system prompt, count every message, and form the tool groups.
 *
 * The tool-call protocol (the provider APIs reject histories that break it): a message carrying
 * results may only answer calls of the group still waiting for results, each call once; any
 * other message may only come once every call has its result; a call id may come back once its
 * call is answered. Breaking it throws InvalidMessageError with the index of the first offending
 * message (Python: InvalidMessageError; `context_manager.repair()` fixes such histories).
 */
export function readConversation(messages: unknown[], options: TrimOptions): Conversation {
  const estimator = makeEstimator(options.estimator);
  const pinned = new Set(options.pinned ?? []);
  const priorities = options.priorities ?? messages.map(() => 0);

  // Messages are read in order, so the first bad one (shape or protocol) is the one reported.
  let systemIndex: number | null = null;
  let systemTokens = 0;
  let first = 0;
  const head = messages.length > 0 ? normalize(messages[0], 0) : null;
  if (head !== null && (head.role === "system" || head.role === "developer")) {
    systemIndex = 0;
    systemTokens = countMessage(head, estimator);
    first = 1; // the system prompt is neither grouped, pinned nor prioritized
  }

  const groups: Group[] = [];
  const issued = new Set<string>(); // every call id seen so far
  const answered = new Set<string>(); // every call id that has its result
  let latestUser = -1;
  for (let i = first; i < messages.length; i++) {
    const record = i === 0 && head !== null ? head : normalize(messages[i], i); // message 0: read above
    const answers = resultIds(record);
    const open = groups.length > 0 ? groups[groups.length - 1] : null;
    const waiting = open !== null ? open.pending : [];

    // The protocol checks, in Python's order.
    for (const [k, id] of answers.entries()) {
      if (answers.indexOf(id) !== k) throw new InvalidMessageError(`duplicate result for tool call '${id}'`, i);
      if (waiting.includes(id)) continue;
      if (answered.has(id)) throw new InvalidMessageError(`duplicate result for tool call '${id}'`, i);
      if (issued.has(id)) throw new InvalidMessageError(`result for tool call '${id}' arrives after other messages`, i);
      throw new InvalidMessageError(`tool result references unknown tool call id '${id}'`, i);
    }
    if (waiting.length > 0 && answers.length === 0) {
      throw new InvalidMessageError(`tool call(s) ${waiting.join(", ")} still await results`, i);
    }
    // A call id names one open call: it may come back once that call has its result (servers
    // that number calls per reply do so), and the results after it answer the new call.

    // Join the open group when this message carries some of its results; else start a group.
    let group: Group;
    if (open !== null && waiting.length > 0 && answers.length > 0) {
      group = open;
      group.priority = Math.max(group.priority, priorities[i]);
    } else {
      group = {
        indices: [],
        tokens: 0,
        pinned: false,
        priority: priorities[i],
        pending: [],
        hasLatestUser: false,
        firstRole: turnRole(record),
        lastRole: turnRole(record),
        opensWithUserTurn: isUserTurn(record),
      };
      groups.push(group);
    }
    group.indices.push(i);
    group.tokens += countMessage(record, estimator);
    group.pinned = group.pinned || pinned.has(i);
    group.lastRole = turnRole(record);
    group.pending = group.pending.filter((id) => !answers.includes(id));
    for (const id of answers) answered.add(id);
    for (const call of record.toolCalls) {
      issued.add(call.id);
      group.pending.push(call.id);
    }
    if (isUserTurn(record)) latestUser = groups.length - 1;
  }
  if (latestUser >= 0) groups[latestUser].hasLatestUser = true;
  return { systemIndex, systemTokens, groups, estimator };
}

/** Which groups the sliding window keeps, besides the pinned ones (see rule 7). */
function slidingWindow(groups: Group[], room: number, maxMessages: number | null, latest: number | null): Set<number> {
  // Walk from the newest group back while the run still fits: pinned groups cost nothing here
  // (already paid for) but do count as messages toward maxMessages.
  function oldestStart(lowest: number, tokenRoom: number, messageRoom: number | null): number {
    let start = groups.length;
    let tokens = 0;
    let count = 0;
    while (start > lowest) {
      const group = groups[start - 1];
      const cost = group.pinned ? 0 : group.tokens;
      if (tokens + cost > tokenRoom) break;
      if (messageRoom !== null && count + group.indices.length > messageRoom) break;
      tokens += cost;
      count += group.indices.length;
      start -= 1;
    }
    return start;
  }

  const kept = new Set<number>();
  let start = oldestStart(0, room, maxMessages);
  if (latest !== null && latest < start) {
    // The latest user turn is older than the window: keep it, then the most recent groups that
    // fit in what is left (the window can only shrink: it never reaches back before `start`).
    kept.add(latest);
    const latestTokens = groups[latest].tokens;
    const messagesLeft = maxMessages === null ? null : Math.max(maxMessages - groups[latest].indices.length, 0);
    start = oldestStart(start, room - latestTokens, messagesLeft);
  }
  for (let g = start; g < groups.length; g++) kept.add(g);
  return kept;
}

/** Which groups the priority strategy keeps, besides the pinned ones (see rule 7). */
function priorityStrategy(groups: Group[], room: number, latest: number | null): Set<number> {
  const kept = new Set<number>();
  for (let g = 0; g < groups.length; g++) if (!groups[g].pinned) kept.add(g);
  const keptTokens = () => [...kept].reduce((sum, g) => sum + groups[g].tokens, 0);

  // Candidates to drop: lowest priority first, oldest first among equals; never the latest user group.
  const candidates = [...kept].filter((g) => g !== latest);
  candidates.sort((a, b) => groups[a].priority - groups[b].priority || a - b);
  for (const g of candidates) {
    if (keptTokens() <= room) break;
    kept.delete(g);
  }
  return kept;
}

/** The indices of the messages to send, in order, or the overflow object (see the rules above). */
export function trim(messages: unknown[], options: TrimOptions): TrimResult {
  checkOptions(messages, options);
  const budget = options.maxTokens - (options.reserveTokens ?? 0);
  const conversation = readConversation(messages, options);

  // An open group at the end (calls still waiting for results) is never sent.
  let groups = conversation.groups;
  if (groups.length > 0 && groups[groups.length - 1].pending.length > 0) groups = groups.slice(0, -1);

  // The latest user group is protected, unless pinned (kept anyway) or withheld above.
  let latest: number | null = null;
  for (let g = 0; g < groups.length; g++) if (groups[g].hasLatestUser && !groups[g].pinned) latest = g;

  // With a provider, the newest complete group is protected too (rule 8), unless it is the
  // latest user group already or pinned.
  const rules = providerRules(options.provider);
  const last = groups.length - 1;
  const newest = rules !== null && last >= 0 && last !== latest && !groups[last].pinned ? last : null;

  // The lead group (rule 8): the user turn a context opens with when the latest user group cannot.
  let lead: number | null = null;
  // A pinned group before it that opens with a user turn opens the context itself (a pinned
  // system message does not: the provider reads it apart).
  const pinnedOpener = latest !== null && groups.slice(0, latest).some((g) => g.pinned && g.opensWithUserTurn);
  if (rules !== null && rules.firstUser && latest !== null && !pinnedOpener) {
    let q = latest;
    while (q > 0 && !groups[q].opensWithUserTurn) q -= 1;
    if (q < latest && groups[q].opensWithUserTurn) lead = q;
  }

  // What must be sent: reply priming, system prompt, pinned groups, the latest user group (with
  // its lead group, and the newest exchange).
  let fixed = conversation.estimator.promptOverhead + conversation.systemTokens;
  for (const group of groups) if (group.pinned) fixed += group.tokens;
  const latestTokens = latest === null ? 0 : groups[latest].tokens;
  const leadTokens = lead === null ? 0 : groups[lead].tokens;
  const newestTokens = newest === null ? 0 : groups[newest].tokens;
  const required = fixed + latestTokens + leadTokens + newestTokens;
  if (required > budget) return { error: "overflow", required, budget };

  const room = budget - fixed; // for every unpinned group, the protected ones included
  const strategy = options.strategy ?? "sliding_window";
  const choose = (tokens: number) =>
    strategy === "priority"
      ? priorityStrategy(groups, tokens, latest)
      : slidingWindow(groups, tokens, options.maxMessages ?? null, latest);
  // Whether `chosen` covers a protected part: the newest exchange when it holds it; the lead group
  // when, going up to it, it keeps a group that opens with a user turn (or the lead group itself).
  const covers = (chosen: Set<number>, part: number): boolean => {
    if (part === newest) return chosen.has(part);
    for (let g = 0; g <= part; g++) if (chosen.has(g) && (g === part || groups[g].opensWithUserTurn)) return true;
    return false;
  };
  // The parts settled in order (the lead group, then the newest exchange): a part the choice leaves
  // out makes the choice again with that part's tokens set aside (the earlier parts settled again
  // inside it); if it is still left out, it is added.
  const parts: [number, number][] = [];
  if (lead !== null) parts.push([lead, leadTokens]);
  if (newest !== null) parts.push([newest, newestTokens]);
  const settle = (tokens: number, count: number): [Set<number>, number[]] => {
    if (count === 0) return [choose(tokens), []];
    const [part, partTokens] = parts[count - 1];
    let [chosen, added] = settle(tokens, count - 1);
    if (covers(chosen, part)) return [chosen, added];
    [chosen, added] = settle(tokens - partTokens, count - 1);
    return [chosen, covers(chosen, part) ? added : [...added, part]];
  };
  const [chosen, added] = settle(room, parts.length);
  for (const part of added) chosen.add(part);

  let sent: number[] = [];
  for (let g = 0; g < groups.length; g++) if (groups[g].pinned || chosen.has(g)) sent.push(g);
  if (rules !== null) {
    const mustSend = new Set<number>();
    for (let g = 0; g < groups.length; g++) if (groups[g].pinned) mustSend.add(g);
    if (latest !== null) mustSend.add(latest);
    if (newest !== null) mustSend.add(newest);
    sent = applyProviderRules(rules, sent, groups, mustSend);
  }

  const kept: number[] = conversation.systemIndex === null ? [] : [conversation.systemIndex];
  for (const g of sent) kept.push(...groups[g].indices);
  return rules !== null && rules.join ? joinTurns(messages, kept) : kept;
}
