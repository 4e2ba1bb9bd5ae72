// The AG-UI client (@ag-ui/client HttpAgent) against the AG-UI wire.
import { HttpAgent } from "@ag-ui/client";
import { randomUUID } from "node:crypto";
import { BASE, KEY, SERVER_TOOL_TEXTS, greeting, weather, WEATHER_SCHEMA, check, assert, eq, done } from "./lib.mjs";

const forwardedProps = { customerId: "crm/1" };
const tools = [{ name: "get_weather", description: "The weather in a city", parameters: WEATHER_SCHEMA }];
const agent = (threadId = `t-${randomUUID()}`, agentName = "support", key = KEY) =>
  new HttpAgent({ url: `${BASE}/agui/${agentName}`, headers: { Authorization: `Bearer ${key}` }, threadId });
const say = (a, content) => a.addMessage({ id: randomUUID(), role: "user", content });
const texts = (msgs) => msgs.filter((m) => m.role === "assistant" && m.content).map((m) => m.content);

// run runs the agent and returns the new messages and the streamed text.
async function run(a, params = {}) {
  let streamed = "";
  const { newMessages } = await a.runAgent({ forwardedProps, ...params }, { onTextMessageContentEvent: ({ event }) => { streamed += event.delta; } });
  return { newMessages, streamed };
}

await check("plain and streamed (one run is both)", async () => {
  const a = agent();
  say(a, "Hi");
  const { newMessages, streamed } = await run(a);
  eq(texts(newMessages), [greeting()], "assistant message");
  eq(streamed, greeting(), "streamed deltas");
});

await check("client tool round trip on the thread (the client's loop)", async () => {
  const a = agent();
  say(a, "What is the weather in Oslo?");
  const first = await run(a, { tools });
  const call = first.newMessages.find((m) => m.role === "assistant" && m.toolCalls?.length)?.toolCalls[0];
  eq([call?.function.name, JSON.parse(call?.function.arguments ?? "null")], ["get_weather", { city: "Oslo" }], "tool call");
  a.addMessage({ id: randomUUID(), role: "tool", toolCallId: call.id, content: "rain, 8C" });
  // The client resends the whole thread; the box adds each message once.
  const second = await run(a, { tools });
  eq(texts(second.newMessages), [weather()], "answer (the model saw the question and the call once)");
});

await check("a box-run tool with text before and after", async () => {
  const a = agent();
  say(a, "Do you remember me?");
  const { newMessages } = await run(a);
  eq(texts(newMessages), SERVER_TOOL_TEXTS, "two assistant messages");
});

await check("a stopped run, then the next on the same thread", async () => {
  const a = agent();
  say(a, "Tell me a long story");
  let got = "";
  await a.runAgent({ forwardedProps }, { onTextMessageContentEvent: ({ event }) => { got += event.delta; a.abortRun(); } }).catch(() => {});
  assert(got.length > 0, "no text before the stop");
  // The client resends its whole thread, the partial answer included.
  assert(a.messages.some((m) => m.role === "assistant" && m.content?.length > 0), "the client kept the partial answer");
  say(a, "Are you there?");
  for (let i = 0; ; i++) {
    try {
      const { newMessages } = await run(a);
      eq(texts(newMessages).at(-1), greeting(2, true), "the next run saw the question and the cut answer");
      break;
    } catch (e) {
      if (i > 200 || !/409|busy/.test(String(e?.message ?? e))) throw e;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
});

await check("error shapes", async () => {
  const expectFail = async (a, what) => {
    say(a, "Hi");
    const log = console.error;
    console.error = () => {}; // the client logs the failure it throws
    try {
      await run(a);
    } catch (e) {
      return `${e?.status} ${e?.message ?? e}`;
    } finally {
      console.error = log;
    }
    throw new Error(`${what}: no error`);
  };
  let msg = await expectFail(agent(undefined, "nobody"), "unknown agent");
  assert(/404/.test(msg), `unknown agent: ${msg}`);
  msg = await expectFail(agent(undefined, "support", "wrong"), "bad key");
  assert(/401/.test(msg), `bad key: ${msg}`);
  const a = agent();
  say(a, "Please fail");
  let runError = null;
  await a.runAgent({ forwardedProps }, { onRunErrorEvent: ({ event }) => { runError = event; } }).catch(() => {});
  assert(runError && /provider/.test(runError.code ?? runError.message), `provider failure: ${JSON.stringify(runError)}`);
});

await check("20 parallel streams", async () => {
  const got = await Promise.all(Array.from({ length: 20 }, async (_, i) => {
    const a = agent();
    say(a, `Hi, I am number ${i}`);
    return (await run(a)).streamed;
  }));
  got.forEach((t, i) => eq(t, greeting(), `stream ${i}`));
});

done();
