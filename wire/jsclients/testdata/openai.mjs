// The official openai package against the Chat Completions wire.
import OpenAI from "openai";
import { BASE, KEY, IDENTITIES, SERVER_TOOL_TEXTS, greeting, weather, WEATHER_SCHEMA, check, assert, eq, done, newSession, UUID_RE, afterStop, expectError, GREETING_USAGE, runOf, BACKUP_ANSWER, CONTINUED_ANSWER } from "./lib.mjs";

const client = new OpenAI({ baseURL: `${BASE}/openai/v1`, apiKey: KEY, maxRetries: 0, defaultHeaders: { "x-stackbone-identities": IDENTITIES } });
const user = (content) => [{ role: "user", content }];
const tools = [{ type: "function", function: { name: "get_weather", description: "The weather in a city", parameters: WEATHER_SCHEMA } }];

async function streamText(params, opts) {
  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } }, opts);
  let text = "", usage = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? "";
    if (chunk.usage) usage = chunk.usage;
  }
  return { text, usage };
}

await check("plain", async () => {
  const { data, response } = await client.chat.completions.create({ model: "support", messages: user("Hi") }).withResponse();
  eq(data.choices[0].message.content, greeting(), "content");
  eq(data.choices[0].finish_reason, "stop", "finish_reason");
  eq([data.usage.prompt_tokens, data.usage.completion_tokens], [GREETING_USAGE.input, GREETING_USAGE.output], "usage");
  assert(UUID_RE.test(response.headers.get("x-stackbone-run-id") ?? ""), "x-stackbone-run-id");
});

await check("a chain's backup answers when the primary fails", async () => {
  const { data, response } = await client.chat.completions.create({ model: "chained", messages: user("Please fall back") }).withResponse();
  eq(data.choices[0].message.content, BACKUP_ANSWER, "content");
  const run = await runOf(response.headers.get("x-stackbone-run-id"));
  eq([run.model, run.metadata.servedBy], ["backup/chat", "backup/chat"], "the run's model");
  eq(run.metadata.modelsSkipped.map((s) => s.model), ["openai/chat"], "models skipped");
});

await check("a cut stream goes on from the backup, once", async () => {
  const { text } = await streamText({ model: "chained", messages: user("Tell me, cut short") });
  eq(text, CONTINUED_ANSWER, "text");
});

await check("streamed", async () => {
  const { text, usage } = await streamText({ model: "support", messages: user("Hi") });
  eq(text, greeting(), "text");
  eq([usage?.prompt_tokens, usage?.completion_tokens], [GREETING_USAGE.input, GREETING_USAGE.output], "usage chunk");
});

await check("client tool round trip", async () => {
  const messages = user("What is the weather in Oslo?");
  const first = await client.chat.completions.create({ model: "support", messages, tools });
  const call = first.choices[0].message.tool_calls?.[0];
  eq(first.choices[0].finish_reason, "tool_calls", "finish_reason");
  eq([call?.function.name, JSON.parse(call?.function.arguments ?? "null")], ["get_weather", { city: "Oslo" }], "call");
  messages.push(first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "rain, 8C" });
  const second = await client.chat.completions.create({ model: "support", messages, tools });
  eq(second.choices[0].message.content, weather(), "answer");
});

for (const stream of [false, true]) {
  await check(`runTools on a session${stream ? ", streamed" : ""}`, async () => {
    const headers = { "x-stackbone-session": newSession() };
    const runner = client.chat.completions.runTools(
      {
        model: "support", stream, messages: user("What is the weather in Oslo?"),
        tools: [{ type: "function", function: { name: "get_weather", parameters: WEATHER_SCHEMA, parse: JSON.parse, function: async ({ city }) => `rain, 8C in ${city}` } }],
      },
      { headers },
    );
    // The SDK resends the whole conversation with the tool's result; the
    // model must see the question and the call once.
    eq(await runner.finalContent(), weather(), "final content");
    const again = await client.chat.completions.create({ model: "support", messages: user("Thanks!") }, { headers });
    eq(again.choices[0].message.content, "Hello from the box. [users=2 calls=1 results=1 cut=false]", "the session after the loop");
  });
}

await check("a box-run tool with text before and after", async () => {
  const want = SERVER_TOOL_TEXTS.join("\n\n");
  const plain = await client.chat.completions.create({ model: "support", messages: user("Do you remember me?") });
  eq(plain.choices[0].message.content, want, "plain");
  eq((await streamText({ model: "support", messages: user("Do you remember me?") })).text, want, "streamed");
});

await check("a stopped turn, then the next on the same session", async () => {
  const headers = { "x-stackbone-session": newSession() };
  const controller = new AbortController();
  const stream = await client.chat.completions.create({ model: "support", stream: true, messages: user("Tell me a long story") }, { headers, signal: controller.signal });
  let got = "";
  try {
    for await (const chunk of stream) {
      got += chunk.choices[0]?.delta?.content ?? "";
      if (got.length > 0) controller.abort();
    }
  } catch (e) {
    assert(e instanceof OpenAI.APIUserAbortError || e?.name === "AbortError", `abort: ${e}`);
  }
  assert(got.length > 0 && "Once upon a time".startsWith(got.slice(0, 16)), `streamed before the stop: ${JSON.stringify(got)}`);
  const next = await afterStop(() => client.chat.completions.create({ model: "support", messages: user("Are you there?") }, { headers }));
  eq(next.choices[0].message.content, greeting(2, true), "the next turn saw the question and the cut answer");
});

await check("error shapes", async () => {
  let e = await expectError(() => client.chat.completions.create({ model: "nobody", messages: user("Hi") }), "unknown model");
  assert(e instanceof OpenAI.NotFoundError && e.code === "model_not_found" && e.param === "model", `unknown model: ${e}`);
  const bad = new OpenAI({ baseURL: `${BASE}/openai/v1`, apiKey: "wrong", maxRetries: 0 });
  e = await expectError(() => bad.chat.completions.create({ model: "support", messages: user("Hi") }), "bad key");
  assert(e instanceof OpenAI.AuthenticationError && e.type === "authentication_error", `bad key: ${e}`);
  e = await expectError(() => client.chat.completions.create({ model: "support", n: 2, messages: user("Hi") }), "n=2");
  assert(e instanceof OpenAI.BadRequestError && e.param === "n" && e.type === "invalid_request_error", `n=2: ${e}`);
  e = await expectError(() => client.chat.completions.create({ model: "support", messages: user("Please fail") }), "provider failure");
  assert(e instanceof OpenAI.APIError && e.status === 502 && e.code === "provider_error", `provider failure: ${e}`);
  const headers = { "x-stackbone-session": newSession() };
  await client.chat.completions.create({ model: "support", messages: user("Hi") }, { headers });
  e = await expectError(() => client.chat.completions.create({ model: "support", messages: [
    { role: "user", content: "Hi" }, { role: "assistant", content: "Something else entirely." }, { role: "user", content: "And?" }] }, { headers }), "contradiction");
  assert(e instanceof OpenAI.BadRequestError && /differs from the session's history/.test(e.message), `contradiction: ${e}`);
  const heldSession = { "x-stackbone-session": newSession() };
  const held = await client.chat.completions.create({ model: "guarded", messages: user("Please save that I like tea") }, { headers: heldSession });
  eq(held.stackbone?.held?.name, "memory_save", "the held call's extension");
  e = await expectError(() => client.chat.completions.create({ model: "guarded", messages: user("Hello?") }, { headers: heldSession }), "decision pending");
  assert(e instanceof OpenAI.ConflictError && e.code === "decision_pending" && e.headers?.get("x-should-retry") === "false", `decision pending: ${e}`);
  e = await expectError(() => client.embeddings.create({ model: "support", input: "x" }), "unknown route");
  assert(e instanceof OpenAI.NotFoundError && /POST \/openai\/v1\/responses/.test(e.message), `unknown route: ${e}`);
});

await check("20 parallel streams", async () => {
  const texts = await Promise.all(Array.from({ length: 20 }, (_, i) =>
    streamText({ model: "support", messages: user(`Hi, I am number ${i}`) }, { headers: { "x-stackbone-session": newSession() } }).then((r) => r.text)));
  texts.forEach((t, i) => eq(t, greeting(), `stream ${i}`));
});

done();
