// The chars/4 token estimator (context_manager/counting/estimate.py, `CharEstimator`).
//
// No tokenizer: a message costs ceil(chars / charsPerToken) + messageOverhead tokens, plus
// imageTokens per image; a prompt costs promptOverhead once more (the reply priming of chat
// models). "chars" are JavaScript string lengths, i.e. UTF-16 code units: an emoji outside the
// Basic Multilingual Plane counts 2, a CJK character 1, a combining accent 1 on its own.

import { ConfigurationError } from "./errors.ts";
import type { MessageRecord } from "./messages.ts";

export interface EstimatorOptions {
  /** Characters per token (> 0). Default 4. */
  charsPerToken?: number;
  /** Tokens added to every message (its chat framing). Default 3. */
  messageOverhead?: number;
  /** Tokens added once per prompt (reply priming). Default 3. */
  promptOverhead?: number;
  /** Tokens charged per image part. Default 85 (OpenAI's low-detail cost). */
  imageTokens?: number;
}

export interface Estimator {
  charsPerToken: number;
  messageOverhead: number;
  promptOverhead: number;
  imageTokens: number;
}

/** Fill in the defaults: chars/4, 3 tokens per message, 3 per prompt, 85 per image. */
export function makeEstimator(options: EstimatorOptions = {}): Estimator {
  const estimator = {
    charsPerToken: options.charsPerToken ?? 4,
    messageOverhead: options.messageOverhead ?? 3,
    promptOverhead: options.promptOverhead ?? 3,
    imageTokens: options.imageTokens ?? 85,
  };
  if (!(estimator.charsPerToken > 0)) {
    throw new ConfigurationError(`charsPerToken must be > 0, got ${estimator.charsPerToken}`);
  }
  return estimator;
}

/**
 * The characters a message is charged for: its text, thinking, name, each tool call's name and
 * JSON arguments, each carried tool result's text, and the JSON of parts we do not model.
 * Ids (tool_call_id, tool_use_id) and the role are not charged: messageOverhead covers framing.
 */
export function messageChars(message: MessageRecord): number {
  let chars = message.text.length + message.thinking.length + (message.name ?? "").length;
  for (const call of message.toolCalls) chars += call.name.length + call.arguments.length;
  for (const result of message.toolResults) chars += result.text.length;
  chars += message.other.length;
  return chars;
}

/** Tokens one message costs inside a prompt. */
export function countMessage(message: MessageRecord, estimator: Estimator): number {
  const textTokens = Math.ceil(messageChars(message) / estimator.charsPerToken);
  return textTokens + estimator.messageOverhead + estimator.imageTokens * message.images;
}
