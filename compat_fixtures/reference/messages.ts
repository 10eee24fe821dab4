// Reading one chat message: OpenAI and Anthropic dict shapes -> the record the rules use.
//
// This states, in TypeScript, what context_manager/messages.py (`normalize`) does with plain JSON
// messages. Only the fields the trimming rules need are kept: what costs tokens, which tool calls
// a message makes, and which tool calls it answers.

import { InvalidMessageError } from "./errors.ts";

export const ROLES = ["system", "developer", "user", "assistant", "tool"] as const;
export type Role = (typeof ROLES)[number];


export interface ToolCall {
  id: string;
  name: string;
  /** The JSON text of the arguments, as sent to the model. */
  arguments: string;
}

export interface ToolResult {
  callId: string;
  text: string;
}

/** The normalized message. Every string length below is a JavaScript `.length` (UTF-16 units). */
export interface MessageRecord {
  role: Role;
  /** Text parts (and refusals), joined with "\n". */
  text: string;
  name: string | null;
  /** Tool calls this message makes (OpenAI `tool_calls`, Anthropic `tool_use` blocks). */
  toolCalls: ToolCall[];
  /** OpenAI tool message: the id of the call it answers. Only kept on role "tool". */
  toolCallId: string | null;
  /** Anthropic `tool_result` blocks carried by this message. */
  toolResults: ToolResult[];
  /** Number of image parts, those nested inside tool results included. */
  images: number;
  /** Thinking blocks, then `reasoning_content`, then `reasoning`, joined with "\n". */
  thinking: string;
  /** Compact JSON of every content part of a type we do not model, joined with "\n". */
  other: string;
}

const TEXT_PART_TYPES = ["text", "input_text", "output_text"];
const IMAGE_PART_TYPES = ["image_url", "image", "input_image"];

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

function isObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Ids of the tool calls a message answers (empty for ordinary messages). */
export function resultIds(message: MessageRecord): string[] {
  if (message.toolCallId !== null) return [message.toolCallId];
  return message.toolResults.map((result) => result.callId);
}

/** The pieces collected from a message's content, before they are joined. */
class Parts {
  texts: string[] = [];
  images = 0;
  toolCalls: ToolCall[] = [];
  results: ToolResult[] = [];
  thinking: string[] = [];
  other: string[] = [];
}

/**
 * The text of a `tool_result` block: a string as is; a list of parts -> its text parts and the
 * JSON of its unknown parts, joined with "\n" (thinking, tool calls and nested results inside a
 * result are not counted). Images inside a result count as images of the message.
 */
function resultText(content: Json | undefined, index: number, outer: Parts): string {
  if (content === undefined || content === null) return "";
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    const inner = new Parts();
    for (const part of content) readPart(part, index, inner);
    outer.images += inner.images;
    return [...inner.texts, ...inner.other].join("\n");
  }
  throw new InvalidMessageError("tool_result content must be a string or a list of blocks", index);
}

function readPart(part: Json, index: number, out: Parts): void {
  if (typeof part === "string") {
    out.texts.push(part); // a bare string inside a content list is a text part
    return;
  }
  if (!isObject(part)) throw new InvalidMessageError("content parts must be objects or strings", index);
  const type = part.type;
  if (typeof type === "string" && TEXT_PART_TYPES.includes(type)) {
    const text = "text" in part ? part.text : "";
    if (typeof text !== "string") throw new InvalidMessageError("text part needs a string 'text'", index);
    out.texts.push(text);
  } else if (typeof type === "string" && IMAGE_PART_TYPES.includes(type)) {
    out.images += 1; // an image costs a fixed number of tokens, whatever its size
  } else if (type === "tool_use") {
    if (typeof part.id !== "string" || typeof part.name !== "string") {
      throw new InvalidMessageError("tool_use block needs string 'id' and 'name'", index);
    }
    // Arguments are the compact JSON of `input` (an absent input counts as {}).
    const input = "input" in part ? part.input : {};
    out.toolCalls.push({ id: part.id, name: part.name, arguments: JSON.stringify(input) });
  } else if (type === "tool_result") {
    if (typeof part.tool_use_id !== "string") {
      throw new InvalidMessageError("tool_result block needs a string 'tool_use_id'", index);
    }
    out.results.push({ callId: part.tool_use_id, text: resultText(part.content, index, out) });
  } else if (type === "thinking") {
    out.thinking.push(stringField(part, "thinking", index));
  } else if (type === "refusal") {
    out.texts.push(stringField(part, "refusal", index)); // a refusal is text the model wrote
  } else {
    // Any other part (documents, audio, provider extras, a part without a type) still costs
    // tokens: we charge its compact JSON rather than counting it as free.
    out.other.push(JSON.stringify(part));
  }
}

/**
 * `part[key]` as a string ("" when absent). The reference accepts strings only; Python would
 * also stringify other values (str(None) is "None"), which has no TypeScript equivalent.
 */
function stringField(part: JsonObject, key: string, index: number): string {
  const value = key in part ? part[key] : "";
  if (typeof value !== "string") throw new InvalidMessageError(`'${key}' must be a string`, index);
  return value;
}

function openAiToolCall(raw: Json, index: number): ToolCall {
  if (!isObject(raw)) throw new InvalidMessageError("each tool_calls entry must be an object", index);
  const fn = raw.function;
  if (typeof raw.id !== "string" || raw.id === "") {
    throw new InvalidMessageError("tool call without a string 'id'", index);
  }
  if (!isObject(fn) || typeof fn.name !== "string") {
    throw new InvalidMessageError(`tool call '${raw.id}' needs 'function': {name, arguments}`, index);
  }
  // `arguments` is normally a JSON string, counted as is; anything else is counted as its JSON.
  const args = "arguments" in fn ? fn.arguments : "";
  return { id: raw.id, name: fn.name, arguments: typeof args === "string" ? args : JSON.stringify(args) };
}

/** Normalize one OpenAI / Anthropic chat message (a plain JSON object). */
export function normalize(message: unknown, index: number): MessageRecord {
  if (!isObject(message)) throw new InvalidMessageError("a message must be an object", index);
  const role = message.role;
  if (typeof role !== "string" || !(ROLES as readonly string[]).includes(role)) {
    throw new InvalidMessageError(`unknown role ${JSON.stringify(role ?? null)}`, index);
  }
  const parts = new Parts();

  // content: absent/null (nothing), a string (one text part), or a list of parts.
  const content = message.content;
  if (typeof content === "string") parts.texts.push(content);
  else if (Array.isArray(content)) for (const part of content) readPart(part, index, parts);
  else if (content !== undefined && content !== null) {
    throw new InvalidMessageError("content must be a string or a list of parts", index);
  }

  // OpenAI tool calls, only on assistant messages.
  const rawCalls = message.tool_calls;
  if (rawCalls !== undefined && rawCalls !== null) {
    if (role !== "assistant" || !Array.isArray(rawCalls)) {
      throw new InvalidMessageError("'tool_calls' must be a list on an assistant message", index);
    }
    for (const raw of rawCalls) parts.toolCalls.push(openAiToolCall(raw, index));
  }

  // Reasoning text some OpenAI-compatible APIs return beside the content.
  for (const key of ["reasoning_content", "reasoning"]) {
    const value = message[key];
    if (typeof value === "string" && value !== "") parts.thinking.push(value);
  }

  const name = message.name ?? null;
  if (name !== null && typeof name !== "string") throw new InvalidMessageError("'name' must be a string", index);

  // A tool message must say which call it answers; on other roles `tool_call_id` is ignored.
  let toolCallId: string | null = null;
  if (role === "tool") {
    const id = message.tool_call_id;
    if (typeof id !== "string" || id === "") {
      throw new InvalidMessageError("tool message without a string 'tool_call_id'", index);
    }
    toolCallId = id;
  }

  return {
    role: role as Role,
    text: parts.texts.join("\n"),
    name,
    toolCalls: parts.toolCalls,
    toolCallId,
    toolResults: parts.results,
    images: parts.images,
    thinking: parts.thinking.join("\n"),
    other: parts.other.join("\n"),
  };
}
