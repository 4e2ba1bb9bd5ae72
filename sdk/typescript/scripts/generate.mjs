// Writes src/api.gen.ts, the SDK's types of the box's API, from the
// box's OpenAPI document (api/openapi.json at the repository root).
// With --check it writes nothing and fails when the committed file is
// stale.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const docPath = join(here, '..', '..', '..', 'api', 'openapi.json');
const outPath = join(here, '..', 'src', 'api.gen.ts');

const doc = JSON.parse(readFileSync(docPath, 'utf8'));

function ident(name) {
  return /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name) ? name : JSON.stringify(name);
}

function ts(schema, indent = '') {
  if (!schema || Object.keys(schema).length === 0) return 'unknown';
  if (schema.$ref) return schema.$ref.replace('#/components/schemas/', '');
  if (schema.oneOf) return schema.oneOf.map((s) => ts(s, indent)).join(' | ');
  if (schema.allOf) return schema.allOf.map((s) => ts(s, indent)).join(' & ');
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  const types = Array.isArray(schema.type) ? schema.type : schema.type ? [schema.type] : [];
  if (types.length === 0) {
    return schema.properties ? ts({ ...schema, type: 'object' }, indent) : 'unknown';
  }
  const parts = types.map((t) => {
    switch (t) {
      case 'string':
        return 'string';
      case 'integer':
      case 'number':
        return 'number';
      case 'boolean':
        return 'boolean';
      case 'null':
        return 'null';
      case 'array':
        return `Array<${ts(schema.items, indent)}>`;
      case 'object': {
        const props = schema.properties ?? {};
        const required = new Set(schema.required ?? []);
        const names = Object.keys(props).sort();
        const inner = indent + '  ';
        const lines = names.map((n) => {
          const p = props[n];
          const doc = p && p.description ? `${inner}/** ${p.description.replace(/\*\//g, '* /')} */\n` : '';
          return `${doc}${inner}${ident(n)}${required.has(n) ? '' : '?'}: ${ts(p, inner)};`;
        });
        if (schema.additionalProperties && typeof schema.additionalProperties === 'object') {
          lines.push(`${inner}[key: string]: ${ts(schema.additionalProperties, inner)};`);
        } else if (names.length === 0) {
          return 'Record<string, unknown>';
        }
        return `{\n${lines.join('\n')}\n${indent}}`;
      }
      default:
        return 'unknown';
    }
  });
  return parts.join(' | ');
}

let out = '// Generated from api/openapi.json by scripts/generate.mjs. Do not edit.\n\n';
for (const [name, schema] of Object.entries(doc.components.schemas).sort(([a], [b]) => a.localeCompare(b))) {
  out += `export type ${name} = ${ts(schema)};\n\n`;
}

// Each operation's request body, query and success data.
const ops = [];
for (const [path, methods] of Object.entries(doc.paths)) {
  for (const [method, op] of Object.entries(methods)) {
    ops.push({ path, method: method.toUpperCase(), op });
  }
}
ops.sort((a, b) => a.op.operationId.localeCompare(b.op.operationId));
out += '/** Every operation of the API: its route, request body, query and the data of its success answer. */\n';
out += 'export interface Operations {\n';
for (const { path, method, op } of ops) {
  const body = op.requestBody?.content?.['application/json']?.schema;
  const ok = Object.entries(op.responses).find(([s]) => s.startsWith('2'));
  const okSchema = ok?.[1]?.content?.['application/json']?.schema;
  const data = okSchema?.properties?.data ?? (okSchema ? okSchema : null);
  const query = (op.parameters ?? []).filter((p) => p.in === 'query');
  const codes = Object.entries(op.responses)
    .filter(([s]) => !s.startsWith('2'))
    .flatMap(([, r]) => {
      const ref = r.$ref ? doc.components.responses[r.$ref.split('/').pop()] : r;
      const enumCodes = ref.content['application/json'].schema.properties.error.allOf[1].properties.code.enum;
      return enumCodes;
    });
  out += `  /** ${method} ${path}: ${op.summary.replace(/\*\//g, '* /')} */\n`;
  out += `  ${op.operationId}: {\n`;
  out += `    method: ${JSON.stringify(method)};\n    path: ${JSON.stringify(path)};\n`;
  out += `    body: ${body ? ts(body, '    ') : 'never'};\n`;
  out += `    query: ${query.length ? '{ ' + query.map((p) => `${ident(p.name)}?: ${p.schema.type === 'integer' ? 'number' : p.schema.type};`).join(' ') + ' }' : 'never'};\n`;
  out += `    data: ${data ? ts(data, '    ') : 'void'};\n`;
  out += `    codes: ${[...new Set(codes)].sort().map((c) => JSON.stringify(c)).join(' | ')};\n`;
  out += '  };\n';
}
out += '}\n\n';
out += '/** Every error code the API answers. */\n';
out += "export type ErrorCode = Operations[keyof Operations]['codes'];\n";

if (process.argv.includes('--check')) {
  let old = '';
  try {
    old = readFileSync(outPath, 'utf8');
  } catch {}
  if (old !== out) {
    console.error('src/api.gen.ts is stale: run `npm run generate` in sdk/typescript');
    process.exit(1);
  }
} else {
  writeFileSync(outPath, out);
}
