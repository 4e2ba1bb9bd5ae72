// Copies the browser call module (placeCall) (dist/esm/call.js) and the client it
// uses (dist/esm/index.js) into Studio's static files (studio/static/sdk),
// so Studio's test call runs the SDK's own code. Run after the build
// (`npm run studio` does both). With --check it writes nothing and fails
// when Studio's copy differs from the build.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, '..', 'dist', 'esm');
const out = join(here, '..', '..', '..', 'studio', 'static', 'sdk');

let stale = [];
for (const name of ['index.js', 'call.js']) {
  const src = name.replace(/\.js$/, '.ts');
  const text =
    `// Built from sdk/typescript/src/${src} by \`npm run studio\` in sdk/typescript. Do not edit.\n` +
    readFileSync(join(dist, name), 'utf8');
  const path = join(out, name);
  if (process.argv.includes('--check')) {
    let old = '';
    try {
      old = readFileSync(path, 'utf8');
    } catch {}
    if (old !== text) stale.push(`studio/static/sdk/${name}`);
  } else {
    mkdirSync(out, { recursive: true });
    writeFileSync(path, text);
  }
}
if (stale.length) {
  console.error(`${stale.join(', ')}: stale; run \`npm run studio\` in sdk/typescript`);
  process.exit(1);
}
