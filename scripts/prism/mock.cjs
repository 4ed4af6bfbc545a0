#!/usr/bin/env node
// mock.cjs: Stoplight Prism's validating mock server on one OpenAPI document,
// as `prism mock --errors DOC` runs it, for the e2e test e2e/prism_test.go.
//
//   node mock.cjs [--circular=ignore|dereference] DOC [PATHS.json]
//
// It listens on 127.0.0.1 on a port the kernel picks and prints one JSON line
// on stdout once it serves: {"url":"http://127.0.0.1:PORT","operations":N,
// "loadMs":MS}. Prism's own log (warnings and errors; PRISM_LOG_LEVEL=info
// for every request) goes to stderr. It runs until it is killed.
//
// It differs from the CLI in four ways, none of which touches validation:
//   - PATHS.json (optional) is a JSON array of path keys of DOC: only those
//     path items are kept, with the components they reach through internal
//     $refs (and every security scheme). Prism dereferences the whole
//     document before it serves; the test calls a sample of operations only.
//   - --circular=ignore (the default) leaves a $ref that closes a cycle as a
//     $ref instead of dereferencing it into a cyclic object graph. Prism
//     bundles such refs for its validator either way (the CLI turns the
//     cycles it made back into $refs with decycle), but building and
//     decycling the graph takes minutes on the corpus' most interlinked
//     documents (Stripe, Microsoft Graph: more than 5 minutes even pruned)
//     and seconds where the ignore mode takes milliseconds.
//     --circular=dereference loads exactly as the CLI does.
//   - The CLI's list of example URLs, one per operation, is not printed:
//     generating it takes longer than loading some documents.
//   - Responses are not validated (the test judges requests only).
//
// Every request is checked as by `prism mock --errors`: routing (404/405
// problem+json), security, then path, query, header and body against the
// document. Request violations come back in Prism's `sl-violations` header
// (a JSON list whose entries have location ["request", ...] and a
// severity) and, for errors, as a 401, 415 or 422 answer.
'use strict';

const fs = require('fs');
const path = require('path');
const $RefParser = require('@stoplight/json-schema-ref-parser');
const { bundleTarget, decycle } = require('@stoplight/json');
const { transformOas2Operations } = require('@stoplight/http-spec/oas2/operation');
const { transformOas3Operations } = require('@stoplight/http-spec/oas3/operation');
const { createServer } = require('@stoplight/prism-http-server');
const { createLogger } = require('@stoplight/prism-core');

// refTarget names the entry an internal $ref keeps: its first three pointer
// segments under components ("components/schemas/Pet"), else its first two
// ("definitions/Pet", "paths//pets/{id}").
function refTarget(ref) {
  if (typeof ref !== 'string' || !ref.startsWith('#/')) return null;
  const segs = ref.slice(2).split('/').map(s => {
    try { s = decodeURIComponent(s); } catch { /* not percent-encoded */ }
    return s.replace(/~1/g, '/').replace(/~0/g, '~');
  });
  const n = segs[0] === 'components' ? 3 : 2;
  return segs.length >= n ? segs.slice(0, n) : null;
}

const TOP_LEVEL = ['swagger', 'openapi', 'info', 'host', 'basePath', 'schemes', 'consumes', 'produces',
  'servers', 'security', 'securityDefinitions', 'tags', 'externalDocs', 'jsonSchemaDialect'];

// prune keeps the path items named by keep and what they reach.
function prune(doc, keep) {
  // Top-level keys that are not routes or what routes reach (webhooks,
  // x-webhooks and other extensions) are left out.
  const out = {};
  for (const k of TOP_LEVEL) if (k in doc) out[k] = doc[k];
  out.paths = {};
  const kept = new Set();
  const queue = [];
  const visit = node => {
    if (Array.isArray(node)) return node.forEach(visit);
    if (!node || typeof node !== 'object') return;
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref') {
        const t = refTarget(v);
        if (t && !kept.has(t.join('\0'))) {
          kept.add(t.join('\0'));
          queue.push(t);
        }
      } else visit(v);
    }
  };
  for (const p of keep) {
    if (!doc.paths || !(p in doc.paths)) throw new Error(`path ${JSON.stringify(p)} is not in the document`);
    out.paths[p] = doc.paths[p];
    visit(doc.paths[p]);
  }
  visit(doc.security);
  // Swagger 2.0 containers and OpenAPI 3 components, emptied then refilled
  // with what is reached.
  for (const k of ['definitions', 'parameters', 'responses']) if (doc[k]) out[k] = {};
  if (doc.components) {
    out.components = {};
    for (const [k, v] of Object.entries(doc.components)) out.components[k] = k === 'securitySchemes' ? v : {};
  }
  while (queue.length) {
    const t = queue.shift();
    let src = doc, dst = out;
    for (const s of t.slice(0, -1)) {
      src = src && src[s];
      if (dst[s] === undefined) dst[s] = {};
      dst = dst[s];
    }
    const last = t[t.length - 1];
    if (src && typeof src === 'object' && last in src) {
      dst[last] = src[last];
      visit(src[last]);
    }
  }
  return out;
}

// loadOperations is prism-http's getHttpOperationsFromSpec (5.12.0) with the
// circular option: dereference, decycle, transform every operation, and
// bundle into each the nodes its remaining $refs point to.
async function loadOperations(doc, circular) {
  const options = circular === 'ignore' ? { dereference: { circular: 'ignore' } } : {};
  const result = decycle(await new $RefParser().dereference(doc, options));
  let operations;
  if (result.swagger !== undefined) operations = transformOas2Operations(result);
  else if (result.openapi !== undefined) operations = transformOas3Operations(result);
  else throw new Error('not an OpenAPI document (no swagger or openapi key)');
  return operations.map(op =>
    bundleTarget({ document: { ...result, __target__: op }, path: '#/__target__', cloneDocument: false }));
}

async function main() {
  const args = process.argv.slice(2);
  let circular = 'ignore';
  while (args[0] && args[0].startsWith('--')) {
    const m = /^--circular=(ignore|dereference)$/.exec(args.shift());
    if (!m) throw new Error('usage: node mock.cjs [--circular=ignore|dereference] DOC [PATHS.json]');
    circular = m[1];
  }
  const [docPath, pathsFile] = args;
  if (!docPath) throw new Error('usage: node mock.cjs [--circular=ignore|dereference] DOC [PATHS.json]');
  const started = Date.now();
  let doc = await new $RefParser().parse(path.resolve(docPath));
  if (pathsFile) doc = prune(doc, JSON.parse(fs.readFileSync(pathsFile, 'utf8')));
  // Relative $refs resolve against the current directory when the parser is
  // given an object: make that the document's.
  process.chdir(path.dirname(path.resolve(docPath)));
  const operations = await loadOperations(doc, circular);
  if (operations.length === 0) throw new Error('no operations found in the document');
  const logger = createLogger('PRISM', { level: process.env.PRISM_LOG_LEVEL || 'warn' }, process.stderr);
  const server = createServer(operations, {
    cors: false,
    config: {
      validateRequest: true,
      validateResponse: false,
      checkSecurity: true,
      errors: true,
      isProxy: false,
      upstreamProxy: undefined,
      mock: { dynamic: false, ignoreExamples: false },
    },
    components: { logger },
  });
  const url = await server.listen(0, '127.0.0.1');
  process.stdout.write(JSON.stringify({ url, operations: operations.length, circular, loadMs: Date.now() - started }) + '\n');
}

main().catch(err => {
  process.stderr.write(`mock.cjs: ${process.argv.slice(2).join(' ')}: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
