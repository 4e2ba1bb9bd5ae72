// The seeds' examples type-check against the published declarations
// (tsc --noEmit -p tsconfig.typecheck.json; the Go test runs it).
import { stackbone, createClient, SdkError, type Result, type RagHit, type MemoryAddResult } from '@stackbone/sdk';

declare const externalRunId: string;
declare const transcript: string;
declare const callerPhone: string;
declare const startedAt: string;
declare const durationSeconds: number;

export async function add(): Promise<void> {
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
}

export async function addTranscript(): Promise<MemoryAddResult | null> {
  const { data, error } = await stackbone.memory.add(transcript, {
    agentId: 'support',
    userId: callerPhone,
    call: {
      startedAt,
      durationSeconds,
      outcome: 'transferred',
    },
  });
  if (error) return null;
  return data;
}

export async function recall(): Promise<string[]> {
  const result = await stackbone.memory.recall({
    agentId: 'support',
    userId: callerPhone,
    calls: 3,
  });

  if (result.error) throw result.error;

  const factsForPrompt = result.data.facts.map((fact) => fact.content);
  const recentCalls = result.data.calls;
  return factsForPrompt.concat(recentCalls.map((c) => c.summary));
}

export async function deleteAll(): Promise<void> {
  const result = await stackbone.memory.deleteAll({ agentId: 'support', userId: callerPhone });
  if (result.error) throw result.error;
  console.log(result.data.deleted);
}

export function configure(): void {
  createClient({
    memory: {
      model: 'openai/gpt-5.6-luna',
      reasoningEffort: 'medium',
    },
  });
}

export async function searchDocs({ query }: { query: string }): Promise<string> {
  const result = await stackbone.rag.retrieve({
    text: query,
    topK: 3,
    namespace: 'help-center', // the collection to search
  });
  if (result.error) return `search_failed: ${result.error.code}`;
  if (result.data.length === 0) return 'No matching article in the help center.';
  return result.data.map((hit) => `[${hit.score.toFixed(2)}] ${hit.content}`).join('\n\n');
}

export async function ingest(): Promise<void> {
  const r = await stackbone.rag.ingest({ id: 'returns.md', collection: 'help-center', chunks: [{ content: 'Thirty days.' }] });
  if (r.error instanceof SdkError) console.log(r.error.code, r.error.status);
}

// Result narrows on error.
export function narrow(r: Result<RagHit[]>): number {
  if (r.error) {
    // @ts-expect-error data is null on a failure
    return r.data.length;
  }
  return r.data.length;
}

export async function pages(): Promise<void> {
  for await (const call of stackbone.voice.calls.list({ agent: 'support', limit: 50 })) {
    console.log(call.id, call.outcome);
  }
  const first = await stackbone.runs.list();
  if (!first.error) console.log(first.data[0]?.id);
  // @ts-expect-error agentId is required
  await stackbone.memory.recall({ userId: 'x' });
}
