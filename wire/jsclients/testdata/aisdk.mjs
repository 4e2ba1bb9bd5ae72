// The Vercel AI SDK (ai with @ai-sdk/openai): its Chat Completions provider
// and its default provider, which speaks the Responses API.
import { generateText, streamText, tool, stepCountIs, APICallError } from "ai";
import { createOpenAI } from "@ai-sdk/openai";
import { z } from "zod";
import { BASE, KEY, IDENTITIES, SERVER_TOOL_TEXTS, greeting, weather, check, assert, eq, done, newSession, UUID_RE, afterStop, expectError } from "./lib.mjs";

const provider = createOpenAI({ baseURL: `${BASE}/openai/v1`, apiKey: KEY, headers: { "x-stackbone-identities": IDENTITIES } });
const tools = {
  get_weather: tool({ description: "The weather in a city", inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => `rain, 8C in ${city}` }),
};
const retries = { maxRetries: 0 };

for (const [name, model] of [["chat", provider.chat("support")], ["responses (the default provider)", provider("support")]]) {
  await check(`${name}: plain`, async () => {
    const r = await generateText({ model, prompt: "Hi", ...retries });
    eq(r.text, greeting(), "text");
    assert(r.usage.inputTokens > 0 && r.usage.outputTokens > 0, `usage ${JSON.stringify(r.usage)}`);
    assert(UUID_RE.test(r.response.headers?.["x-stackbone-run-id"] ?? ""), "x-stackbone-run-id");
  });

  await check(`${name}: streamed`, async () => {
    const r = streamText({ model, prompt: "Hi", ...retries });
    let streamed = "";
    for await (const t of r.textStream) streamed += t;
    eq(streamed, greeting(), "streamed text");
    assert((await r.usage).outputTokens > 0, "usage");
  });

  await check(`${name}: client tool round trip (the SDK's loop)`, async () => {
    const r = await generateText({ model, prompt: "What is the weather in Oslo?", tools, stopWhen: stepCountIs(3), ...retries });
    eq(r.steps.length, 2, "steps");
    eq(r.steps[0].toolCalls.map((c) => [c.toolName, c.input]), [["get_weather", { city: "Oslo" }]], "tool call");
    eq(r.text, weather(), "answer (the model saw the question and the call once)");
  });

  await check(`${name}: the SDK's tool loop on a session`, async () => {
    const headers = { "x-stackbone-session": newSession() };
    const r = await generateText({ model, prompt: "What is the weather in Oslo?", tools, stopWhen: stepCountIs(3), headers, ...retries });
    eq(r.text, weather(), "answer");
    const again = await generateText({ model, messages: [...[{ role: "user", content: "What is the weather in Oslo?" }], ...r.response.messages, { role: "user", content: "Thanks!" }], headers, ...retries });
    eq(again.text, "Hello from the box. [users=2 calls=1 results=1 cut=false]", "the session after the loop");
  });

  await check(`${name}: a box-run tool with text before and after`, async () => {
    const r = await generateText({ model, prompt: "Do you remember me?", ...retries });
    const parts = r.content.filter((p) => p.type === "text").map((p) => p.text);
    if (name === "chat") eq(parts, [SERVER_TOOL_TEXTS.join("\n\n")], "one text, the steps a paragraph each");
    else eq(parts, SERVER_TOOL_TEXTS, "one message item per step");
    const s = streamText({ model, prompt: "Do you remember me?", ...retries });
    let streamed = "";
    for await (const t of s.textStream) streamed += t;
    eq(streamed, name === "chat" ? SERVER_TOOL_TEXTS.join("\n\n") : SERVER_TOOL_TEXTS.join(""), "streamed");
  });

  await check(`${name}: a stopped turn, then the next on the same session`, async () => {
    const headers = { "x-stackbone-session": newSession() };
    const controller = new AbortController();
    const s = streamText({ model, prompt: "Tell me a long story", headers, abortSignal: controller.signal, ...retries });
    let got = "";
    try {
      for await (const t of s.textStream) {
        got += t;
        controller.abort();
      }
    } catch (e) {
      assert(e?.name === "AbortError" || controller.signal.aborted, `abort: ${e}`);
    }
    assert(got.length > 0, "no text before the stop");
    const next = await afterStop(async () => {
      try {
        return await generateText({ model, prompt: "Are you there?", headers, ...retries });
      } catch (e) {
        throw Object.assign(e, { status: e.statusCode });
      }
    });
    eq(next.text, greeting(2, true), "the next turn saw the question and the cut answer");
  });

  await check(`${name}: error shapes`, async () => {
    const unknown = name === "chat" ? provider.chat("nobody") : provider("nobody");
    let e = await expectError(() => generateText({ model: unknown, prompt: "Hi", ...retries }), "unknown model");
    assert(APICallError.isInstance(e) && e.statusCode === 404 && /model_not_found/.test(e.responseBody), `unknown model: ${e}`);
    const bad = createOpenAI({ baseURL: `${BASE}/openai/v1`, apiKey: "wrong" });
    e = await expectError(() => generateText({ model: name === "chat" ? bad.chat("support") : bad("support"), prompt: "Hi", ...retries }), "bad key");
    assert(APICallError.isInstance(e) && e.statusCode === 401 && /authentication_error/.test(e.responseBody), `bad key: ${e}`);
    e = await expectError(() => generateText({ model, prompt: "Please fail", ...retries }), "provider failure");
    assert(APICallError.isInstance(e) && e.statusCode === 502 && /provider_error/.test(e.responseBody), `provider failure: ${e}`);
  });

  await check(`${name}: 20 parallel streams`, async () => {
    const texts = await Promise.all(Array.from({ length: 20 }, (_, i) => streamText({ model, prompt: `Hi, I am number ${i}`, ...retries }).text));
    texts.forEach((t, i) => eq(t, greeting(), `stream ${i}`));
  });
}

done();
