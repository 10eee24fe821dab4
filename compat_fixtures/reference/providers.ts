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
//       that must be sent.
//     - alternate (Anthropic, Bedrock, Gemini): where the kept groups are not adjacent in the
//       history, the group before the gap must not end with the role the group after it starts
//       with (tool results count as user turns). On a clash the older group goes; if it must be
//       sent, the newer one; if both must be sent, the clash stays (validate() reports it).
//       After a drop, the new neighbours are compared again.
//     Groups that must be sent: the latest user group, the newest exchange, pinned groups.
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
}

export const PROVIDERS: Readonly<Record<ProviderName, ProviderRules>> = {
  openai: { name: "openai", firstUser: false, alternate: false },
  "openai-responses": { name: "openai-responses", firstUser: false, alternate: false },
  anthropic: { name: "anthropic", firstUser: true, alternate: true },
  bedrock: { name: "bedrock", firstUser: true, alternate: true },
  gemini: { name: "gemini", firstUser: true, alternate: true },
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
  let first = 0;
  if (rules.firstUser) {
    while (first < chosen.length && !mustSend.has(chosen[first]) && !groups[chosen[first]].opensWithUserTurn) {
      first += 1;
    }
  }
  const candidates = chosen.slice(first);
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
