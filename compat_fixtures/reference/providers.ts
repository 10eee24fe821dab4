// What each provider API accepts of a trimmed conversation, stated in TypeScript
// (Python: context_manager/providers.py; the sources of each rule are in docs/guide/providers.md).
//
// Trimming removes whole groups, so it can create contexts an API rejects even when the full
// history was fine: an assistant turn first, or two user turns brought together by a gap. With
// `provider` set, `trim` (trim.ts) keeps two promises:
//
//  A. The newest exchange is sent. Besides the latest user group, the newest complete group
//     (e.g. the tool call whose results the model just received) is protected: it counts toward
//     the overflow check, and if the strategy leaves it out, the strategy runs again with its
//     tokens set aside, and it is added.
//  B. The provider's rules hold where trimming made the cut. They are kept by DROPPING groups from
//     what the strategy chose (never by adding any), so the context can only get smaller:
//     - firstUser (Anthropic, Bedrock, Gemini): the first message after the system prompt is a
//       user turn. Leading groups that do not open with one are dropped, stopping at a group
//       that must be sent; a pinned system group is read apart and does not stop it.
//     - alternate (Anthropic, Bedrock, Gemini): where the kept groups are not adjacent in the
//       history, the group before the gap must not end with the role the group after it starts
//       with (tool results count as user turns). On a clash the older group goes; if it must be
//       sent, the newer one; if both must be sent, the clash stays (validate() reports it).
//       After a drop, the new neighbours are compared again.
//     Groups that must be sent: the latest user group, the newest exchange, pinned groups.
//  C. join (Bedrock, whose Converse API wants roles to alternate strictly): after trimming,
//     neighbouring turns of one role are sent as one turn, the way Anthropic's API merges them
//     server-side (an interrupted call's synthetic result and the user's next words, or two user
//     turns the caller sent). Only plain turns are joined: objects whose keys are just `role`
//     ("user" or "assistant") and `content` (a string, read as one text block, none when empty,
//     or an array of objects), and only where the joined turn keeps the other rules: no text
//     before a tool_result, no thinking after other blocks, no block after a tool_use. In the
//     result a joined turn is the array of the indices it joins.
//  OpenAI Chat Completions and Responses need only the tool-call pairing, which whole groups
//  already keep: for them only promise A changes the result.

import { ConfigurationError } from "./errors.ts";

export type ProviderName = "openai" | "openai-responses" | "anthropic" | "bedrock" | "gemini";

export interface ProviderRules {
  name: ProviderName;
  /** The first non-system message must be a user turn. */
  firstUser: boolean;
  /** Trimming must not bring two turns of the same role together. */
  alternate: boolean;
  /** Neighbouring turns of one role are sent joined (rule C). */
  join: boolean;
}

export const PROVIDERS: Readonly<Record<ProviderName, ProviderRules>> = {
  openai: { name: "openai", firstUser: false, alternate: false, join: false },
  "openai-responses": { name: "openai-responses", firstUser: false, alternate: false, join: false },
  anthropic: { name: "anthropic", firstUser: true, alternate: true, join: false },
  bedrock: { name: "bedrock", firstUser: true, alternate: true, join: true },
  gemini: { name: "gemini", firstUser: true, alternate: true, join: false },
};

/** The rule set named by the `provider` option: null/undefined means none (no extra rules). */
export function providerRules(provider: unknown): ProviderRules | null {
  if (provider === undefined || provider === null) return null;
  if (typeof provider === "string" && Object.hasOwn(PROVIDERS, provider)) {
    return PROVIDERS[provider as ProviderName];
  }
  throw new ConfigurationError(
    `unknown provider ${JSON.stringify(provider)}; use one of ${Object.keys(PROVIDERS).join(", ")} or null`,
  );
}

/** What the rules read of a group: the roles at its two ends as the provider sees them. */
export interface GroupEnds {
  /** Role of its first message ("tool" reads as "user": results travel in user turns). */
  firstRole: string;
  /** Role of its last message, read the same way. */
  lastRole: string;
  /** Its first message is something the person wrote (a user message with text, or without results). */
  opensWithUserTurn: boolean;
}

const isSystem = (role: string) => role === "system" || role === "developer";

/**
 * The groups of `chosen` (ascending group indices) that may be sent under `rules` (rule B above).
 * `mustSend` holds the groups that are never dropped.
 */
export function applyProviderRules(
  rules: ProviderRules,
  chosen: number[],
  groups: GroupEnds[],
  mustSend: Set<number>,
): number[] {
  let candidates = chosen;
  if (rules.firstUser) {
    // A pinned system message is read apart by the provider: it does not shield the turn after it.
    let lead = 0;
    while (lead < chosen.length && mustSend.has(chosen[lead]) && isSystem(groups[chosen[lead]].firstRole)) {
      lead += 1;
    }
    let first = lead;
    while (first < chosen.length && !mustSend.has(chosen[first]) && !groups[chosen[first]].opensWithUserTurn) {
      first += 1;
    }
    candidates = [...chosen.slice(0, lead), ...chosen.slice(first)];
  }
  if (!rules.alternate) return candidates;

  // Walk oldest to newest, keeping a stack of the groups accepted so far: a newcomer that clashes
  // with the top of the stack across a gap either removes it (then meets the new top) or is skipped.
  const clash = (older: number, newer: number) =>
    newer !== older + 1 && groups[older].lastRole === groups[newer].firstRole;
  const sent: number[] = [];
  for (const group of candidates) {
    let skip = false;
    while (sent.length > 0 && clash(sent[sent.length - 1], group)) {
      if (!mustSend.has(sent[sent.length - 1])) {
        sent.pop();
      } else {
        skip = !mustSend.has(group);
        break;
      }
    }
    if (!skip) sent.push(group);
  }
  return sent;
}

/** The block types of a plain turn (rule C), or null when the turn is not one. */
function plainTurn(message: unknown): { role: string; types: string[] } | null {
  if (typeof message !== "object" || message === null || Array.isArray(message)) return null;
  const record = message as Record<string, unknown>;
  if (Object.keys(record).some((key) => key !== "role" && key !== "content")) return null;
  if (record.role !== "user" && record.role !== "assistant") return null;
  const content = record.content;
  if (typeof content === "string") return { role: record.role, types: content === "" ? [] : ["text"] };
  if (!Array.isArray(content)) return null;
  const types: string[] = [];
  for (const block of content) {
    if (typeof block !== "object" || block === null || Array.isArray(block)) return null;
    types.push(String((block as Record<string, unknown>).type));
  }
  return { role: record.role, types };
}

/** `kept` (message indices in order) with neighbouring plain turns of one role joined (rule C). */
export function joinTurns(messages: unknown[], kept: number[]): (number | number[])[] {
  const out: (number | number[])[] = [];
  let open: { role: string; types: string[] } | null = null; // the last entry, read as a turn
  for (const index of kept) {
    const turn = plainTurn(messages[index]);
    if (open !== null && turn !== null && open.role === turn.role) {
      const textBeforeResult =
        turn.types.includes("tool_result") && open.types.some((type) => type !== "tool_result");
      const thinkingLate = turn.types.includes("thinking") || turn.types.includes("redacted_thinking");
      const afterCall = open.types.includes("tool_use");
      const fits = turn.role === "user" ? !textBeforeResult : !thinkingLate && !afterCall;
      if (fits) {
        const last = out[out.length - 1];
        out[out.length - 1] = Array.isArray(last) ? [...last, index] : [last, index];
        open = { role: turn.role, types: [...open.types, ...turn.types] };
        continue;
      }
    }
    out.push(index);
    open = turn;
  }
  return out;
}
