// Run against a box whose person-memory tables are missing.
import { test } from 'node:test';
import '../lib.mjs';
import { fails } from '../lib.mjs';
import { stackbone } from '@stackbone/sdk';

test('memory_schema_missing from add, recall and deleteAll', async () => {
  const who = { agentId: 'support', userId: 'schema-person' };
  fails(await stackbone.memory.recall(who), 'memory_schema_missing', 503);
  fails(await stackbone.memory.deleteAll(who), 'memory_schema_missing', 503);
  fails(await stackbone.memory.add('Caller: where is my order?', who), 'memory_schema_missing', 503);
});
