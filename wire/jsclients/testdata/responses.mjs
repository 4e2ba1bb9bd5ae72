// The official openai package against the Responses API.
import OpenAI from "openai";
import { BASE, KEY, IDENTITIES, SERVER_TOOL_TEXTS, greeting, weather, WEATHER_SCHEMA, check, assert, eq, done, newSession, UUID_RE, afterStop, expectError, GREETING_USAGE } from "./lib.mjs";

const client = new OpenAI({ baseURL: `${BASE}/openai/v1`, apiKey: KEY, maxRetries: 0, defaultHeaders: { "x-stackbone-identities": IDENTITIES } });
const base = { model: "support" };
const tools = [{ type: "function", name: "get_weather", description: "The weather in a city", parameters: WEATHER_SCHEMA, strict: false }];

async function streamed(params, opts) {
  const stream = await client.responses.create({ ...params, stream: true }, opts);
  let text = "", final = null;
  const types = [];
  for await (const ev of stream) {
    types.push(ev.type);
    if (ev.type === "response.output_text.delta") text += ev.delta;
    if (ev.type === "response.completed") final = ev.response;
  }
  return { text, final, types };
}

await check("plain", async () => {
  const { data, response } = await client.responses.create({ ...base, input: "Hi", instructions: "Be brief." }).withResponse();
  eq(data.output_text, greeting(), "output_text");
  eq(data.status, "completed", "status");
  eq([data.usage.input_tokens, data.usage.output_tokens], [GREETING_USAGE.input, GREETING_USAGE.output], "usage");
  assert(UUID_RE.test(response.headers.get("x-stackbone-run-id") ?? ""), "x-stackbone-run-id");
});

await check("streamed", async () => {
  const { text, final, types } = await streamed({ ...base, input: "Hi" });
  eq(text, greeting(), "text");
  eq(final?.output_text ?? final?.output?.[0]?.content?.[0]?.text, greeting(), "completed response");
  eq(types[0], "response.created", "first event");
  eq([final.usage.input_tokens, final.usage.output_tokens], [GREETING_USAGE.input, GREETING_USAGE.output], "usage");
});

await check("function tools across turns with previous_response_id", async () => {
  const first = await client.responses.create({ ...base, input: "What is the weather in Oslo?", tools });
  const call = first.output.find((i) => i.type === "function_call");
  eq([call?.name, JSON.parse(call?.arguments ?? "null")], ["get_weather", { city: "Oslo" }], "function_call");
  const second = await client.responses.create({ ...base, previous_response_id: first.id, tools,
    input: [{ type: "function_call_output", call_id: call.call_id, output: "rain, 8C" }] });
  eq(second.output_text, weather(), "answer (the model saw the question and the call once)");
  const third = await client.responses.create({ ...base, previous_response_id: second.id, input: "Thanks!" });
  eq(third.output_text, "Hello from the box. [users=2 calls=1 results=1 cut=false]", "a third turn");
});

await check("function tools, the whole input resent (the docs' pattern)", async () => {
  const input = [{ role: "user", content: "What is the weather in Oslo?" }];
  const first = await client.responses.create({ ...base, input, tools });
  const call = first.output.find((i) => i.type === "function_call");
  input.push(...first.output, { type: "function_call_output", call_id: call.call_id, output: "rain, 8C" });
  const second = await client.responses.create({ ...base, input, tools });
  eq(second.output_text, weather(), "answer");
});

await check("a box-run tool with text before and after", async () => {
  const plain = await client.responses.create({ ...base, input: "Do you remember me?" });
  eq(plain.output.map((i) => i.content?.[0]?.text), SERVER_TOOL_TEXTS, "one message item per step");
  const { final } = await streamed({ ...base, input: "Do you remember me?" });
  eq(final.output.map((i) => i.content?.[0]?.text), SERVER_TOOL_TEXTS, "streamed items");
});

await check("a stopped turn, then the next on the same conversation", async () => {
  const stream = await client.responses.create({ ...base, input: "Tell me a long story", stream: true });
  let id = "", got = "";
  try {
    for await (const ev of stream) {
      if (ev.type === "response.created") id = ev.response.id;
      if (ev.type === "response.output_text.delta") {
        got += ev.delta;
        stream.controller.abort();
      }
    }
  } catch (e) {
    assert(e instanceof OpenAI.APIUserAbortError, `abort: ${e}`);
  }
  assert(id && got.length > 0, "no text before the stop");
  const next = await afterStop(() => client.responses.create({ ...base, previous_response_id: id, input: "Are you there?" }));
  eq(next.output_text, greeting(2, true), "the next turn saw the question and the cut answer");
});

await check("error shapes", async () => {
  let e = await expectError(() => client.responses.create({ ...base, model: "nobody", input: "Hi" }), "unknown model");
  assert(e instanceof OpenAI.NotFoundError && e.code === "model_not_found", `unknown model: ${e}`);
  e = await expectError(() => client.responses.create({ ...base, previous_response_id: "resp_unknown", input: "Hi" }), "unknown previous response");
  assert(e instanceof OpenAI.BadRequestError && e.code === "previous_response_not_found" && e.param === "previous_response_id", `previous: ${e}`);
  e = await expectError(() => client.responses.create({ ...base, input: "Hi", text: { format: { type: "json_object" } } }), "json format");
  assert(e instanceof OpenAI.BadRequestError && e.param === "text", `text format: ${e}`);
  e = await expectError(() => client.responses.create({ ...base, input: "Please fail" }), "provider failure");
  assert(e instanceof OpenAI.APIError && e.status === 502 && e.code === "provider_error", `provider failure: ${e}`);
  const held = await client.responses.create({ ...base, model: "guarded", input: "Please save that I like tea" });
  eq(held.stackbone?.held?.name, "memory_save", "the held call's extension");
  e = await expectError(() => client.responses.create({ ...base, model: "guarded", previous_response_id: held.id, input: "Hello?" }), "decision pending");
  assert(e instanceof OpenAI.ConflictError && e.code === "decision_pending", `decision pending: ${e}`);
  const bad = new OpenAI({ baseURL: `${BASE}/openai/v1`, apiKey: "wrong", maxRetries: 0 });
  e = await expectError(() => bad.responses.create({ ...base, input: "Hi" }), "bad key");
  assert(e instanceof OpenAI.AuthenticationError, `bad key: ${e}`);
});

await check("20 parallel streams", async () => {
  const got = await Promise.all(Array.from({ length: 20 }, (_, i) => streamed({ ...base, input: `Hi, I am number ${i}` }).then((r) => r.text)));
  got.forEach((t, i) => eq(t, greeting(), `stream ${i}`));
});

done();
