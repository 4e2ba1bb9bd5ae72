// The official @anthropic-ai/sdk package against the Messages wire.
import Anthropic from "@anthropic-ai/sdk";
import { BASE, KEY, IDENTITIES, SERVER_TOOL_TEXTS, greeting, weather, WEATHER_SCHEMA, check, assert, eq, done, newSession, UUID_RE, afterStop, expectError, GREETING_USAGE, runOf, BACKUP_ANSWER, CONTINUED_ANSWER } from "./lib.mjs";

const client = new Anthropic({ baseURL: `${BASE}/anthropic`, apiKey: KEY, maxRetries: 0, defaultHeaders: { "x-stackbone-identities": IDENTITIES } });
const user = (content) => [{ role: "user", content }];
const base = { model: "support", max_tokens: 1024 };
const tools = [{ name: "get_weather", description: "The weather in a city", input_schema: WEATHER_SCHEMA }];
const texts = (msg) => msg.content.filter((b) => b.type === "text").map((b) => b.text);

await check("plain", async () => {
  const { data, response } = await client.messages.create({ ...base, messages: user("Hi") }).withResponse();
  eq(texts(data), [greeting()], "text");
  eq(data.stop_reason, "end_turn", "stop_reason");
  eq([data.usage.input_tokens, data.usage.output_tokens], [GREETING_USAGE.input, GREETING_USAGE.output], "usage");
  assert(UUID_RE.test(response.headers.get("x-stackbone-run-id") ?? ""), "x-stackbone-run-id");
});

await check("a chain's backup answers when the primary fails", async () => {
  const { data, response } = await client.messages.create({ ...base, model: "chained", messages: user("Please fall back") }).withResponse();
  eq(texts(data), [BACKUP_ANSWER], "text");
  const run = await runOf(response.headers.get("x-stackbone-run-id"));
  eq([run.model, run.metadata.servedBy], ["backup/chat", "backup/chat"], "the run's model");
  eq(run.metadata.modelsSkipped.map((s) => s.model), ["openai/chat"], "models skipped");
});

await check("a cut stream goes on from the backup, once", async () => {
  let streamed = "";
  const stream = client.messages.stream({ ...base, model: "chained", messages: user("Tell me, cut short") });
  stream.on("text", (t) => (streamed += t));
  const msg = await stream.finalMessage();
  eq(streamed, CONTINUED_ANSWER, "streamed text");
  eq(texts(msg), [CONTINUED_ANSWER], "final message");
});

await check("streamed", async () => {
  let streamed = "", startInput = -1;
  const stream = client.messages.stream({ ...base, messages: user("Hi") });
  stream.on("text", (t) => (streamed += t));
  stream.on("streamEvent", (ev) => { if (ev.type === "message_start") startInput = ev.message.usage.input_tokens; });
  const msg = await stream.finalMessage();
  eq(streamed, greeting(), "streamed text");
  eq(texts(msg), [greeting()], "final message");
  eq([msg.usage.input_tokens, msg.usage.output_tokens], [GREETING_USAGE.input, GREETING_USAGE.output], "final usage");
  eq(startInput, GREETING_USAGE.input, "message_start input_tokens");
});

// loop is Anthropic's documented tool loop: send, run the tool_use blocks,
// resend the whole conversation with the tool_result blocks.
async function loop(messages, opts) {
  for (let i = 0; i < 4; i++) {
    const msg = await client.messages.create({ ...base, messages, tools }, opts);
    if (msg.stop_reason !== "tool_use") return msg;
    messages.push({ role: "assistant", content: msg.content });
    messages.push({ role: "user", content: msg.content.filter((b) => b.type === "tool_use").map((b) => ({ type: "tool_result", tool_use_id: b.id, content: `rain, 8C in ${b.input.city}` })) });
  }
  throw new Error("the loop did not end");
}

await check("client tool round trip", async () => {
  const messages = user("What is the weather in Oslo?");
  const first = await client.messages.create({ ...base, messages, tools });
  const call = first.content.find((b) => b.type === "tool_use");
  eq(first.stop_reason, "tool_use", "stop_reason");
  eq([call?.name, call?.input], ["get_weather", { city: "Oslo" }], "tool_use");
  const msg = await loop(user("What is the weather in Oslo?"));
  eq(texts(msg), [weather()], "answer");
});

await check("the documented tool loop on a session", async () => {
  const headers = { "x-stackbone-session": newSession() };
  const msg = await loop(user("What is the weather in Oslo?"), { headers });
  eq(texts(msg), [weather()], "answer (the model saw the question and the call once)");
  const again = await client.messages.create({ ...base, messages: user("Thanks!") }, { headers });
  eq(texts(again), ["Hello from the box. [users=2 calls=1 results=1 cut=false]"], "the session after the loop");
});

await check("a box-run tool with text before and after", async () => {
  eq(texts(await client.messages.create({ ...base, messages: user("Do you remember me?") })), SERVER_TOOL_TEXTS, "plain blocks");
  eq(texts(await client.messages.stream({ ...base, messages: user("Do you remember me?") }).finalMessage()), SERVER_TOOL_TEXTS, "streamed blocks");
});

await check("a stopped turn, then the next on the same session", async () => {
  const headers = { "x-stackbone-session": newSession() };
  const stream = client.messages.stream({ ...base, messages: user("Tell me a long story") }, { headers });
  let got = "";
  stream.on("text", (t) => { got += t; stream.abort(); });
  const err = await stream.done().then(() => null, (e) => e);
  assert(err instanceof Anthropic.APIUserAbortError, `abort: ${err}`);
  assert(got.length > 0, "no text before the stop");
  const next = await afterStop(() => client.messages.create({ ...base, messages: user("Are you there?") }, { headers }));
  eq(texts(next), [greeting(2, true)], "the next turn saw the question and the cut answer");
});

await check("error shapes", async () => {
  let e = await expectError(() => client.messages.create({ ...base, model: "nobody", messages: user("Hi") }), "unknown model");
  assert(e instanceof Anthropic.NotFoundError && e.error?.error?.type === "not_found_error", `unknown model: ${e}`);
  const bad = new Anthropic({ baseURL: `${BASE}/anthropic`, apiKey: "wrong", maxRetries: 0 });
  e = await expectError(() => bad.messages.create({ ...base, messages: user("Hi") }), "bad key");
  assert(e instanceof Anthropic.AuthenticationError && e.error?.error?.type === "authentication_error", `bad key: ${e}`);
  e = await expectError(() => client.messages.create({ ...base, top_k: 5, messages: user("Hi") }), "top_k");
  assert(e instanceof Anthropic.BadRequestError && e.error?.error?.type === "invalid_request_error", `top_k: ${e}`);
  e = await expectError(() => client.messages.create({ ...base, messages: user("Please fail") }), "provider failure");
  assert(e instanceof Anthropic.APIError && e.status === 502 && e.error?.error?.type === "api_error", `provider failure: ${e}`);
  const headers = { "x-stackbone-session": newSession() };
  await client.messages.create({ ...base, messages: user("Hi") }, { headers });
  e = await expectError(() => client.messages.create({ ...base, messages: [
    { role: "user", content: "Hi" }, { role: "assistant", content: "Something else entirely." }, { role: "user", content: "And?" }] }, { headers }), "contradiction");
  assert(e instanceof Anthropic.BadRequestError && /differs from the session's history/.test(e.message), `contradiction: ${e}`);
  const heldSession = { "x-stackbone-session": newSession() };
  const held = await client.messages.create({ ...base, model: "guarded", messages: user("Please save that I like tea") }, { headers: heldSession });
  eq(held.stackbone?.held?.name, "memory_save", "the held call's extension");
  e = await expectError(() => client.messages.create({ ...base, model: "guarded", messages: user("Hello?") }, { headers: heldSession }), "decision pending");
  assert(e instanceof Anthropic.ConflictError && e.error?.error?.type === "invalid_request_error" && /decision is pending/.test(e.message), `decision pending: ${e}`);
});

await check("20 parallel streams", async () => {
  const got = await Promise.all(Array.from({ length: 20 }, (_, i) =>
    client.messages.stream({ ...base, messages: user(`Hi, I am number ${i}`) }, { headers: { "x-stackbone-session": newSession() } }).finalMessage()));
  got.forEach((m, i) => eq(texts(m), [greeting()], `stream ${i}`));
});

done();
