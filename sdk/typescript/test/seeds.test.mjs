// The seeds' examples, as the product documentation writes them.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import './lib.mjs';
import { stackbone, createClient } from '@stackbone/sdk';

const callerPhone = '+34111111111';

test('seed: memory.add with messages and call metadata', async () => {
  const externalRunId = 'run_external_42';
  const logged = [];
  const console = { log: (v) => logged.push(v) };

  const result = await stackbone.memory.add(
    [
      { role: 'user', content: 'I am interested in the AI master. Call me after 16:00.' },
      { role: 'assistant', content: 'I will arrange an afternoon follow-up.' },
    ],
    {
      agentId: 'support',
      userId: '+34111111111',
      call: {
        startedAt: '2026-10-26T09:00:00.000Z',
        durationSeconds: 83,
        outcome: 'scheduled',
        // Optional outside a run. Inside a workflow or agent run, the SDK fills
        // this from the ambient run context automatically.
        runId: externalRunId,
      },
    },
  );

  if (result.error) throw result.error;
  console.log(result.data.facts);
  console.log(result.data.call?.summary);

  assert.deepEqual(logged[0].map((f) => f.content), ['Interested in the AI master; call after 16:00.']);
  assert.equal(logged[1], 'Asked about the AI master; wants an afternoon call back.');
  assert.equal(result.data.call.runId, externalRunId);
  assert.equal(result.data.call.durationSeconds, 83);
  assert.equal(result.data.call.outcome, 'scheduled');
  assert.equal(result.data.call.startedAt, '2026-10-26T09:00:00Z');
});

test('seed: memory.add with a transcript string', async () => {
  const transcript = 'Caller: where is my order? Agent: it ships tomorrow.';
  const startedAt = '2026-10-27T10:00:00.000Z';
  const durationSeconds = 41;

  const { data, error } = await stackbone.memory.add(transcript, {
    agentId: 'support',
    userId: callerPhone,
    call: {
      startedAt,
      durationSeconds,
      outcome: 'transferred',
    },
  });

  assert.equal(error, null);
  assert.equal(data.call.outcome, 'transferred');
  assert.ok(data.facts.some((f) => f.content === 'Called about an order.'));
});

test('seed: memory.recall', async () => {
  const result = await stackbone.memory.recall({
    agentId: 'support',
    userId: callerPhone,
    calls: 3,
  });

  if (result.error) throw result.error;

  const factsForPrompt = result.data.facts.map((fact) => fact.content);
  const recentCalls = result.data.calls;

  assert.deepEqual(factsForPrompt.sort(), ['Called about an order.', 'Interested in the AI master; call after 16:00.']);
  assert.equal(recentCalls.length, 2);
  assert.equal(recentCalls[0].outcome, 'transferred'); // newest first
});

test('seed: memory.deleteAll', async () => {
  const logged = [];
  const console = { log: (v) => logged.push(v) };

  const result = await stackbone.memory.deleteAll({ agentId: 'support', userId: callerPhone });
  if (result.error) throw result.error;
  console.log(result.data.deleted);

  assert.equal(logged[0], 4); // two facts and two call records
  const after = await stackbone.memory.recall({ agentId: 'support', userId: callerPhone });
  assert.deepEqual(after.data, { facts: [], calls: [] });
});

test('seed: createClient with memory extraction fallbacks', async () => {
  const client = createClient({
    memory: {
      model: 'openai/gpt-5.6-luna',
      reasoningEffort: 'medium',
    },
  });
  assert.equal(client.baseURL, process.env.STACKBONE_URL);
});

test('seed: rag.retrieve in a search tool', async () => {
  const setup = createClient();
  assert.equal((await setup.rag.collections.create({ name: 'help-center', description: 'Acme help center' })).error, null);
  const ingested = await setup.rag.ingest({
    id: 'returns.md',
    collection: 'help-center',
    chunks: [
      { content: 'You can return an item within 30 days of delivery.' },
      { content: 'Refunds arrive within 5 days of the return.' },
    ],
  });
  assert.equal(ingested.error, null, ingested.error?.message);

  const searchDocs = async ({ query }) => {
    const result = await stackbone.rag.retrieve({
      text: query,
      topK: 3,
      namespace: 'help-center', // the collection to search
    });
    if (result.error) return `search_failed: ${result.error.code}`;
    if (result.data.length === 0) return 'No matching article in the help center.';
    return result.data.map((hit) => `[${hit.score.toFixed(2)}] ${hit.content}`).join('\n\n');
  };

  const answer = await searchDocs({ query: 'How long do I have to return an item?' });
  assert.match(answer, /^\[\d\.\d\d\] /);
  assert.match(answer, /30 days/);
  assert.match(answer, /5 days/);

  const missing = async () => {
    const result = await stackbone.rag.retrieve({ text: 'x', topK: 3, namespace: 'no-such-collection' });
    if (result.error) return `search_failed: ${result.error.code}`;
    return 'found';
  };
  assert.equal(await missing(), 'search_failed: rag_collection_not_found');
});
