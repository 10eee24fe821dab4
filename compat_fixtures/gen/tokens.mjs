// Fixtures for exact token counts (gpt-tokenizer 4.0.0, js-tiktoken 1.0.21).
//
// Suites (input -> expected):
//   tokens.encodeChat.gpt-4o / .gpt-4   {messages:[{role,name?,content}]} -> encodeChat(chat, model).length
//   tokens.countChatCompletionTokens.gpt-4o
//                                        {messages:[{role,name?,content,function_call?}]}
//                                        -> countChatCompletionTokens({messages}) (cookbook formula)
//   tokens.rawText.o200k_base / .cl100k_base  {text} -> js-tiktoken encode(text, [], []).length
//
// Texts come from a seeded generator mixing scripts, emoji (ZWJ, flags, skin tones), combining
// marks, numbers, contractions in odd casing, code, whitespace runs and special-token lookalikes,
// so the pre-tokenizer regexes of both encodings are exercised. encodeChat rejects special-token
// text, so chat contents never contain "<|"; the raw-text and countChatCompletionTokens suites do.
import { getEncoding } from "js-tiktoken";
import * as gpt4o from "gpt-tokenizer/model/gpt-4o";
import * as gpt4 from "gpt-tokenizer/model/gpt-4";
import { makeRng } from "../lib/rng.mjs";

const GPT_TOKENIZER = "gpt-tokenizer@4.0.0";
const JS_TIKTOKEN = "js-tiktoken@1.0.21";
const SEED = 3_2026_11_21;
const CHAT_CASES = 1000;
const RAW_CASES = 1200;


// ---------------------------------------------------------------- text material (our own words)
const WORDS = {
  english: ["the", "budget", "window", "Tokens", "counting", "message", "trim", "assistant",
    "keeps", "ORDER", "quickly", "unbelievable", "re-run", "e-mail", "state-of-the-art"],
  contractions: ["don't", "DON'T", "it's", "IT'S", "we're", "They'Ve", "I'm", "you'll", "she'd",
    "O'Neil", "rock'n'roll", "'tis"],
  german: ["Straße", "Größenänderung", "Übermäßig", "Fußgängerübergang", "schön"],
  french: ["déjà", "garçon", "naïve", "Ça", "coûteux", "œuvre"],
  spanish: ["mañana", "¿Qué?", "¡Hola!", "corazón", "pingüino"],
  polish: ["zażółć", "gęślą", "jaźń", "Łódź"],
  greek: ["καλημέρα", "λόγος", "Ελληνικά", "ΑΘΗΝΑ"],
  russian: ["привет", "Москва", "ЗДРАВСТВУЙТЕ", "токенизация", "ёжик"],
  arabic: ["مرحبا", "العربية", "كتاب", "السلام عليكم"],
  hebrew: ["שלום", "עברית", "ספר"],
  hindi: ["नमस्ते", "हिन्दी", "भाषा", "क्षत्रिय"],
  bengali: ["বাংলা", "ভাষা"],
  thai: ["สวัสดี", "ภาษาไทย", "ครับ"],
  chinese: ["你好", "世界", "上下文管理", "令牌计数", "中华人民共和国"],
  japanese: ["こんにちは", "カタカナ", "日本語", "東京都", "ｶﾀｶﾅ"],
  korean: ["안녕하세요", "한국어", "토큰"],
  vietnamese: ["Tiếng Việt", "xin chào", "người"],
  turkish: ["İstanbul", "ığdır", "şeker"],
  amharic: ["ሰላም", "አማርኛ"],
  georgian: ["გამარჯობა"],
  armenian: ["Բարեւ"],
  tamil: ["வணக்கம்"],
};
const EMOJI = ["😀", "🎉", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "🇺🇸", "❤️", "🧑🏿‍💻", "🙈🙉🙊", "✨", "🤖", "1️⃣",
  "🫠"];
const PUNCT = [".", ",", "!", "?", "...", "—", "–", "…", "«", "»", "“", "”", "‘", "’", "(", ")",
  "[", "]", "{", "}", ":", ";", "/", "\\", "|", "@", "#", "$", "%", "^", "&", "*", "~", "`",
  "->", "=>", "!=", "==", "::", "//", "/*", "*/", "<", ">", "«»", "§", "¶", "°", "±", "™", "©"];
const SPECIAL_LOOKALIKES = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|endofprompt|>",
  "<|fim_prefix|>", "<|start|>", "<|message|>", "<|end|>"];
const CODE = [
  "def f(x):\n    return x * 2\n",
  "for (let i = 0; i < n; i++) {\n\tsum += a[i];\n}",
  "SELECT id, name FROM users WHERE age >= 18;",
  "{\"role\":\"user\",\"content\":\"hi\"}",
  "const re = /\\p{L}+/gu;",
  "#include <stdio.h>\nint main(void) { return 0; }",
  "git commit -m \"fix: count tokens once\"",
  "https://example.com/path?q=1&lang=en#top",
  "    indented\n        more\n",
  "a_b_c = [1, 2, 3]  # trailing comment",
];
const SPACES = [" ", "  ", "   ", "\t", "\n", "\n\n", "\r\n", " \n", "\n \n", "\u00a0", "\u3000",
  "\u2009", "      ", "\n\n\n", " \t "];
const COMBINING = ["\u0301", "\u0308", "\u0327", "\u0323", "\u20dd", "\u0489"];
const RANGES = [
  [0x20, 0x7e], [0xa0, 0xff], [0x100, 0x17f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x5ff],
  [0x600, 0x6ff], [0x900, 0x97f], [0xe00, 0xe7f], [0x1100, 0x11ff], [0x3040, 0x30ff],
  [0x4e00, 0x9fff], [0xac00, 0xd7a3], [0x2200, 0x22ff], [0x2500, 0x257f], [0x1f300, 0x1f6ff],
  [0x1d400, 0x1d4ff],
];

function randomNumber(rng) {
  const kind = rng.int(0, 5);
  if (kind === 0) return String(rng.int(0, 9));
  if (kind === 1) return String(rng.int(10, 99999));
  if (kind === 2) return String(rng.int(0, 10 ** 9)) + String(rng.int(0, 10 ** 6));
  if (kind === 3) return `${rng.int(0, 999)}.${rng.int(0, 99999)}`;
  if (kind === 4) return `${rng.int(1, 12)}/${rng.int(1, 28)}/20${rng.int(10, 30)}`;
  return "١٢٣٤"; // Arabic-Indic digits
}

function randomCodepoints(rng) {
  const [lo, hi] = rng.pick(RANGES);
  let out = "";
  for (let n = rng.int(1, 6); n > 0; n--) {
    let cp = rng.int(lo, hi);
    if (cp >= 0xd800 && cp <= 0xdfff) cp = 0x41; // never emit lone surrogates
    out += String.fromCodePoint(cp);
  }
  return out;
}

function randomWord(rng, language) {
  const bank = WORDS[language ?? rng.pick(Object.keys(WORDS))];
  let word = rng.pick(bank);
  if (rng.chance(0.05)) word = word.toUpperCase();
  if (rng.chance(0.03)) word += rng.pick(COMBINING);
  return word;
}

function segment(rng, { specials, language }) {
  const roll = rng.next();
  if (roll < 0.55) return randomWord(rng, rng.chance(0.7) ? language : undefined);
  if (roll < 0.63) return randomNumber(rng);
  if (roll < 0.72) return rng.pick(PUNCT);
  if (roll < 0.78) return rng.pick(EMOJI).repeat(rng.chance(0.2) ? rng.int(2, 4) : 1);
  if (roll < 0.83) return rng.pick(CODE);
  if (roll < 0.91) return randomCodepoints(rng);
  if (roll < 0.97) return rng.pick(SPACES);
  return specials ? rng.pick(SPECIAL_LOOKALIKES) : rng.pick(PUNCT);
}

/** A text of roughly `target` segments; separators are mostly single spaces, like prose. */
function randomText(rng, target, options) {
  const language = rng.pick(Object.keys(WORDS));
  const parts = [];
  for (let i = 0; i < target; i++) {
    parts.push(segment(rng, { ...options, language }));
    const sep = rng.next();
    parts.push(sep < 0.75 ? " " : sep < 0.85 ? "" : rng.pick(SPACES));
  }
  let text = parts.join("");
  if (rng.chance(0.1)) text = text.trim();
  return text;
}

function textLength(rng) {
  const roll = rng.next();
  if (roll < 0.05) return 0;
  if (roll < 0.45) return rng.int(1, 8);
  if (roll < 0.85) return rng.int(9, 60);
  if (roll < 0.98) return rng.int(61, 300);
  return rng.int(800, 1500); // long
}

/** Chat contents are shorter on average (several per case) but still include long ones. */
function chatTextLength(rng) {
  const roll = rng.next();
  if (roll < 0.05) return 0;
  if (roll < 0.6) return rng.int(1, 8);
  if (roll < 0.95) return rng.int(9, 40);
  if (roll < 0.99) return rng.int(41, 150);
  return rng.int(400, 900); // long
}

// ---------------------------------------------------------------- suites
const ROLES = ["system", "user", "assistant", "user", "assistant", "developer", "tool"];
const NAMES = ["alice", "bob_2", "example_user", "example_assistant", "Tool-Runner", "x", "名前",
  "weather_bot", "AGENT_007"];

function randomChat(rng, { specials, functionCalls }) {
  const messages = [];
  for (let n = rng.int(1, 8); n > 0; n--) {
    const message = { role: rng.pick(ROLES) };
    // Ignored by both gpt-tokenizer functions, required by OpenAI (and by our normalize).
    if (message.role === "tool") message.tool_call_id = `call_${messages.length}`;
    if (rng.chance(0.2)) message.name = rng.pick(NAMES);
    message.content = randomText(rng, chatTextLength(rng), { specials });
    if (functionCalls && message.role === "assistant" && rng.chance(0.3)) {
      const args = { query: randomText(rng, rng.int(1, 6), { specials: false }), n: rng.int(0, 99) };
      message.function_call = { name: rng.pick(["search", "get_weather", "run_sql", "x"]),
        arguments: rng.chance(0.8) ? JSON.stringify(args) : "" };
    }
    messages.push(message);
  }
  return messages;
}

function chatCases(seed, count, expectedOf, options) {
  const rng = makeRng(seed);
  const cases = [];
  for (let i = 0; i < count; i++) {
    const messages = randomChat(rng, options);
    cases.push({ id: `chat-${i}`, input: { messages }, expected: expectedOf(messages) });
  }
  return cases;
}

function rawTextCases(encodingName) {
  const encoding = getEncoding(encodingName);
  const rng = makeRng(SEED + 7);
  const cases = [];
  const fixed = ["", " ", "\n", "hello world", "Hello, World!", "<|endoftext|>", "😀", "👨‍👩‍👧‍👦",
    "1234567890", "   leading and trailing   ", "don't DON'T Don'T", "日本語のテキスト",
    "\r\n\r\n", "a\u0301e\u0301", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"];
  for (const [i, text] of fixed.entries()) cases.push({ id: `fixed-${i}`, text });
  for (let i = 0; cases.length < RAW_CASES; i++) {
    cases.push({ id: `random-${i}`, text: randomText(rng, textLength(rng), { specials: true }) });
  }
  return cases.map(({ id, text }) => ({
    id,
    input: { text },
    expected: encoding.encode(text, [], []).length,
  }));
}

export async function generate(outDir, writeSuite) {
  for (const [model, module] of [["gpt-4o", gpt4o], ["gpt-4", gpt4]]) {
    writeSuite({
      suite: `tokens.encodeChat.${model}`,
      package: GPT_TOKENIZER,
      function: "encodeChat",
      notes: `encodeChat(messages, "${model}").length: <|im_start|>{name ?? role}<|im_sep|>` +
        "{content}<|im_end|> per message + 3 reply priming; a name REPLACES the role",
      cases: chatCases(SEED, CHAT_CASES, (m) => module.encodeChat(m, model).length,
        { specials: false, functionCalls: false }),
    });
  }
  writeSuite({
    suite: "tokens.countChatCompletionTokens.gpt-4o",
    package: GPT_TOKENIZER,
    function: "countChatCompletionTokens",
    notes: "OpenAI cookbook formula: 3 + role + content (+ name + 1) per message, " +
      "function_call name + arguments + 3, + 3 reply priming",
    cases: chatCases(SEED + 1, CHAT_CASES, (m) => gpt4o.countChatCompletionTokens({ messages: m }),
      { specials: true, functionCalls: true }),
  });
  for (const encodingName of ["o200k_base", "cl100k_base"]) {
    writeSuite({
      suite: `tokens.rawText.${encodingName}`,
      package: JS_TIKTOKEN,
      function: "encode",
      notes: `getEncoding("${encodingName}").encode(text, [], []).length (special tokens as text)`,
      cases: rawTextCases(encodingName),
    });
  }
}
