// LangChain's ChatOpenAI (@langchain/openai) against the Chat Completions
// wire, with its bindTools loop.
import { ChatOpenAI } from "@langchain/openai";
import { HumanMessage, ToolMessage } from "@langchain/core/messages";
import { BASE, KEY, IDENTITIES, SERVER_TOOL_TEXTS, greeting, weather, WEATHER_SCHEMA, check, assert, eq, done, newSession, afterStop, expectError } from "./lib.mjs";

const chat = (headers = {}, opts = {}) => new ChatOpenAI({
  model: "support", apiKey: KEY, maxRetries: 0, ...opts,
  configuration: { baseURL: `${BASE}/openai/v1`, defaultHeaders: { "x-stackbone-identities": IDENTITIES, ...headers } },
});
const weatherTool = { type: "function", function: { name: "get_weather", description: "The weather in a city", parameters: WEATHER_SCHEMA } };

async function streamed(model, input, options) {
  let text = "";
  for await (const chunk of await model.stream(input, options)) text += chunk.content;
  return text;
}

// loop is the bindTools loop of LangChain's docs: invoke, run each tool
// call, append the ToolMessages, invoke again with the whole conversation.
async function loop(model, question) {
  const withTools = model.bindTools([weatherTool]);
  const messages = [new HumanMessage(question)];
  for (let i = 0; i < 4; i++) {
    const ai = await withTools.invoke(messages);
    messages.push(ai);
    if (!ai.tool_calls?.length) return { ai, messages };
    for (const c of ai.tool_calls) messages.push(new ToolMessage({ tool_call_id: c.id, content: `rain, 8C in ${c.args.city}` }));
  }
  throw new Error("the loop did not end");
}

await check("plain", async () => {
  const ai = await chat().invoke("Hi");
  eq(ai.content, greeting(), "content");
  assert(ai.usage_metadata?.total_tokens > 0, "usage");
});

await check("streamed", async () => {
  eq(await streamed(chat(), "Hi"), greeting(), "text");
});

await check("client tool round trip", async () => {
  const first = await chat().bindTools([weatherTool]).invoke("What is the weather in Oslo?");
  eq(first.tool_calls?.map((c) => [c.name, c.args]), [["get_weather", { city: "Oslo" }]], "tool calls");
  const { ai } = await loop(chat(), "What is the weather in Oslo?");
  eq(ai.content, weather(), "answer");
});

await check("the bindTools loop on a session", async () => {
  const model = chat({ "x-stackbone-session": newSession() });
  const { ai, messages } = await loop(model, "What is the weather in Oslo?");
  eq(ai.content, weather(), "answer (the model saw the question and the call once)");
  const again = await model.invoke([...messages, new HumanMessage("Thanks!")]);
  eq(again.content, "Hello from the box. [users=2 calls=1 results=1 cut=false]", "the session after the loop");
});

await check("a box-run tool with text before and after", async () => {
  const want = SERVER_TOOL_TEXTS.join("\n\n");
  eq((await chat().invoke("Do you remember me?")).content, want, "plain");
  eq(await streamed(chat(), "Do you remember me?"), want, "streamed");
});

await check("a stopped turn, then the next on the same session", async () => {
  const model = chat({ "x-stackbone-session": newSession() });
  const controller = new AbortController();
  let got = "";
  try {
    for await (const chunk of await model.stream("Tell me a long story", { signal: controller.signal })) {
      got += chunk.content;
      if (got.length > 0) controller.abort();
    }
  } catch (e) {
    assert(controller.signal.aborted, `abort: ${e}`);
  }
  assert(got.length > 0, "no text before the stop");
  const next = await afterStop(() => model.invoke("Are you there?"));
  eq(next.content, greeting(2, true), "the next turn saw the question and the cut answer");
});

await check("error shapes", async () => {
  let e = await expectError(() => chat({}, { model: "nobody" }).invoke("Hi"), "unknown model");
  assert(e.status === 404 && /does not exist/.test(e.message), `unknown model: ${e} (${e.status})`);
  e = await expectError(() => new ChatOpenAI({ model: "support", apiKey: "wrong", maxRetries: 0, configuration: { baseURL: `${BASE}/openai/v1` } }).invoke("Hi"), "bad key");
  assert(e.status === 401, `bad key: ${e} (${e.status})`);
  e = await expectError(() => chat().invoke("Please fail"), "provider failure");
  assert(e.status === 502, `provider failure: ${e} (${e.status})`);
  e = await expectError(() => chat({}, { frequencyPenalty: 1 }).invoke("Hi"), "unsupported option");
  assert(e.status === 400 && /frequency_penalty/.test(e.message), `unsupported option: ${e} (${e.status})`);
});

await check("20 parallel streams", async () => {
  const texts = await Promise.all(Array.from({ length: 20 }, (_, i) => streamed(chat({ "x-stackbone-session": newSession() }), `Hi, I am number ${i}`)));
  texts.forEach((t, i) => eq(t, greeting(), `stream ${i}`));
});

done();
