// Copies the browser call module (placeCall) (dist/esm/call.js) and the
// client it uses (dist/esm/index.js) to where the box serves them: Studio's
// static files (studio/static/sdk) and the call page's (rooms/static/sdk),
// so both browser callers run the SDK's own code. Run after the build
// (`npm run served` does both). With --check it writes nothing and fails
// when a copy differs from the build.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, '..', 'dist', 'esm');
const root = join(here, '..', '..', '..');

const stale = [];
for (const dir of ['studio/static/sdk', 'rooms/static/sdk']) {
  for (const name of ['index.js', 'call.js']) {
    const src = name.replace(/\.js$/, '.ts');
    const text =
      `// Built from sdk/typescript/src/${src} by \`npm run served\` in sdk/typescript. Do not edit.\n` +
      readFileSync(join(dist, name), 'utf8');
    const path = join(root, dir, name);
    if (process.argv.includes('--check')) {
      let old = '';
      try {
        old = readFileSync(path, 'utf8');
      } catch {}
      if (old !== text) stale.push(`${dir}/${name}`);
    } else {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, text);
    }
  }
}
if (stale.length) {
  console.error(`${stale.join(', ')}: stale; run \`npm run served\` in sdk/typescript`);
  process.exit(1);
}
