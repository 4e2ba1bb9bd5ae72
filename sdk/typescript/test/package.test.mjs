// What `npm pack` ships: both builds with their declarations, the browser
// call module, and a README that shows the product documentation's
// examples as written (test/seeds.test.mjs runs them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import './lib.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

// Lines of the seeds' examples, each as the documentation writes it.
const seedLines = [
  "import { stackbone } from '@stackbone/sdk';",
  "    { role: 'user', content: 'I am interested in the AI master. Call me after 16:00.' },",
  '      // Optional outside a run. Inside a workflow or agent run, the SDK fills',
  '      // this from the ambient run context automatically.',
  'console.log(result.data.call?.summary);',
  'const { data, error } = await stackbone.memory.add(transcript, {',
  "    outcome: 'transferred',",
  'const result = await stackbone.memory.recall({',
  'const factsForPrompt = result.data.facts.map((fact) => fact.content);',
  'const recentCalls = result.data.calls;',
  "const result = await stackbone.memory.deleteAll({ agentId: 'support', userId: callerPhone });",
  'console.log(result.data.deleted);',
  "    model: 'openai/gpt-5.6-luna',",
  "    reasoningEffort: 'medium',",
  "  namespace: 'help-center', // the collection to search",
  "if (result.error) return `search_failed: ${result.error.code}`;",
  "return result.data.map((hit) => `[${hit.score.toFixed(2)}] ${hit.content}`).join('\\n\\n');",
];

test('npm pack: both builds, the call module and the README with the seeds\' examples', () => {
  const out = mkdtempSync(join(tmpdir(), 'sdk-pack-'));
  try {
    // The builds are fresh (typescript_test.go builds before the suites).
    const [packed] = JSON.parse(
      execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', out], { cwd: root, encoding: 'utf8' }),
    );
    const files = packed.files.map((f) => f.path);
    for (const f of ['README.md', 'package.json', 'dist/esm/index.js', 'dist/esm/index.d.ts', 'dist/esm/call.js', 'dist/esm/call.d.ts',
      'dist/cjs/index.js', 'dist/cjs/call.js', 'dist/cjs/package.json']) {
      assert.ok(files.includes(f), `${f} is not in the package: ${files.join(', ')}`);
    }
    execFileSync('tar', ['-xzf', join(out, packed.filename), '-C', out, 'package/README.md']);
    const readme = readFileSync(join(out, 'package', 'README.md'), 'utf8').split('\n');
    for (const line of seedLines) assert.ok(readme.includes(line), `the packed README lacks the seeds' line ${JSON.stringify(line)}`);
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});
