// Package jsclients drives the box's text wires with the JavaScript clients
// people use: the official openai and @anthropic-ai/sdk packages, the
// Vercel AI SDK (ai with @ai-sdk/openai, Chat Completions and its default
// Responses provider), LangChain's ChatOpenAI and the AG-UI HttpAgent. Its
// test starts a whole box (wiretest) with the scripted model answering by
// rule (see respond in the test), and runs one Node script per client from
// testdata/ against it; each script checks plain, streamed, a client tool
// round trip, the same on a session with the client's own tool loop, a
// box-run tool with text before and after, a stopped turn followed by the
// next one on the same session, the error shapes and 20 parallel streams.
//
// The clients are pinned by testdata/package-lock.json; scripts/test runs
// npm ci there. Without node the test is skipped and says so.
package jsclients
