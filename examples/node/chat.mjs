// The memwrap proxy from Node.js with the official `openai` package: only baseURL and two headers change.
//
//   memwrap serve                                  # 127.0.0.1:8765, upstream https://api.openai.com/v1
//   cd examples/node && npm install && OPENAI_API_KEY=sk-... node chat.mjs
//
// Env: MEMWRAP_URL (default http://127.0.0.1:8765), MEMWRAP_BANK (default example-user),
// MEMWRAP_API_KEY (when the server has MEMWRAP_API_KEYS), OPENAI_MODEL (default gpt-4o-mini).
import OpenAI from "openai";

const url = process.env.MEMWRAP_URL ?? "http://127.0.0.1:8765";
const bank = process.env.MEMWRAP_BANK ?? "example-user";
const model = process.env.OPENAI_MODEL ?? "gpt-4o-mini";

const client = new OpenAI({
  baseURL: `${url}/v1`,
  apiKey: process.env.OPENAI_API_KEY ?? "sk-placeholder", // goes upstream as it is; memwrap never stores it
  maxRetries: 0,
  defaultHeaders: {
    "X-Memwrap-Bank": bank,
    ...(process.env.MEMWRAP_API_KEY ? { "X-Memwrap-Key": process.env.MEMWRAP_API_KEY } : {}),
  },
});

// Turn 1 tells the assistant something; it is retained when the answer is complete.
const first = await client.chat.completions.create({
  model,
  messages: [{ role: "user", content: "Hi! I'm vegetarian and I just moved to Lisbon." }],
  // One conversation's turns share a session id (otherwise one is derived from its first message).
}, { headers: { "X-Memwrap-Session": "node-demo-1" } });
console.log("turn 1:", first.choices[0].message.content);

// Turn 2, a new conversation, streamed: the proxy recalls "vegetarian" and "Lisbon" into the system prompt.
await new Promise((resolve) => setTimeout(resolve, 1500)); // retains are queued; give the first one a moment
const stream = await client.chat.completions.create({
  model,
  stream: true,
  messages: [{ role: "user", content: "Where should I have dinner tonight?" }],
}, { headers: { "X-Memwrap-Session": "node-demo-2" } });
process.stdout.write("turn 2: ");
for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta?.content ?? "");
process.stdout.write("\n");
