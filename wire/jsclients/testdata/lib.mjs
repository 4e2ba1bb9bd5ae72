// What every client script shares: the box's address, checks, and the
// answers the scripted model gives (see respond in jsclients_test.go).
import { randomUUID } from "node:crypto";

export const BASE = process.env.BOX_URL;
export const KEY = process.env.BOX_KEY;
if (!BASE || !KEY) throw new Error("BOX_URL and BOX_KEY must be set (the Go test sets them)");

// The person every request speaks for (the support agent keys memory on it).
export const IDENTITIES = JSON.stringify({ customerId: "crm/1" });

export const SERVER_TOOL_TEXTS = ["Let me check your saved details.", "I have nothing saved about you yet."];
// GREETING_USAGE is what the scripted model reports for a greeting (on
// every chunk: the box asks it for continuous usage).
export const GREETING_USAGE = { input: 321, output: 12 };
export const greeting = (users = 1, cut = false) => `Hello from the box. [users=${users} calls=0 results=0 cut=${cut}]`;
export const weather = (users = 1, calls = 1, results = 1) => `Rain in Oslo. [users=${users} calls=${calls} results=${results} cut=false]`;
export const WEATHER_SCHEMA = { type: "object", properties: { city: { type: "string" } }, required: ["city"] };

let failures = 0;

export async function check(name, fn) {
  const start = Date.now();
  try {
    await fn();
    console.log(`ok   ${name} (${Date.now() - start} ms)`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e?.stack ?? e}`);
  }
}

export function assert(cond, msg) {
  if (!cond) throw new Error(msg);
}

export function eq(got, want, what) {
  const g = JSON.stringify(got), w = JSON.stringify(want);
  if (g !== w) throw new Error(`${what}: got ${g}, want ${w}`);
}

export function done() {
  if (failures > 0) {
    console.log(`${failures} check(s) failed`);
    process.exit(1);
  }
}

export const newSession = () => `js-${randomUUID()}`;

export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

// afterStop runs fn until the session the stopped turn ran on is free: the
// box records the cut answer right after the client goes away, and until
// then the session answers 409.
export async function afterStop(fn) {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (e?.status !== 409 || i >= 200) throw e;
      await new Promise((r) => setTimeout(r, 10));
    }
  }
}

// runOf is the box's record of a run (GET /api/runs/{id}).
export async function runOf(id) {
  const res = await fetch(`${BASE}/api/runs/${id}`, { headers: { authorization: `Bearer ${KEY}` } });
  if (!res.ok) throw new Error(`GET /api/runs/${id}: ${res.status} ${await res.text()}`);
  return (await res.json()).data;
}

// The chained agent's answers (see respondBackup in jsclients_test.go):
// its primary fails "fall back" and cuts "cut short" after its first half.
export const BACKUP_ANSWER = "Backup here.";
export const CONTINUED_ANSWER = "The first half and the second half.";

// expectError runs fn and returns the error it throws.
export async function expectError(fn, what) {
  try {
    await fn();
  } catch (e) {
    return e;
  }
  throw new Error(`${what}: no error`);
}
