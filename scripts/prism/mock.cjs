#!/usr/bin/env node
// mock.cjs: Stoplight Prism's validating mock server on OpenAPI documents,
// as `prism mock --errors DOC` runs it, for the e2e test e2e/prism_test.go.
//
//   node mock.cjs [--circular=auto|dereference|ignore] [--budget-ms=N] DOC [PATHS.json]
//   node mock.cjs [--circular=auto|dereference|ignore] [--budget-ms=N] --serve
//
// With DOC it serves that document on a port of 127.0.0.1 the kernel picks
// and prints one JSON line on stdout once it does: {"url":"http://127.0.0.1:
// PORT","operations":N,"circular":"dereference","loadMs":MS}. It runs until
// it is killed.
//
// With --serve it reads commands from stdin, one JSON line each, and runs
// them one at a time, so that one process (one start of Node and Prism,
// ~2 s of CPU) serves many documents in turn:
//
//   {"load":"KEY","doc":"PATH","paths":["/pets",...],"circular":"auto","budgetMs":N}
//     (all but load and doc optional) -> {"loaded":"KEY","url":...,
//     "operations":N,"circular":MODE,"loadMs":MS} or {"loaded":"KEY","error":"..."}
//   {"close":"KEY"}  -> {"closed":"KEY"}
//
// and exits at the end of stdin. Prism's own log (warnings and errors;
// PRISM_LOG_LEVEL=info for every request) goes to stderr.
//
// It differs from the CLI in these ways, none of which changes a verdict:
//   - "paths" (PATHS.json) is a JSON array of path keys of the document:
//     only those path items are kept, with the components they reach
//     through internal $refs (and every security scheme). Prism
//     dereferences the whole document before it serves; the test calls a
//     sample of operations only.
//   - Cyclic $refs: Prism's dereference makes each cycle a cyclic object
//     graph (then decycles it), which takes more than 5 minutes on the
//     corpus' most interlinked documents (Stripe, Microsoft Graph), even
//     pruned. Mode auto (the default) runs it in a worker thread
//     (dereference.cjs) for at most budgetMs (default 10 s) and otherwise
//     loads in mode ignore: the $refs that close a cycle stay $refs, for
//     Prism to bundle. Prism then fails to resolve some of them (it cannot
//     compile such a schema); those requests are reported as such (below),
//     not judged valid. The mode used is in the "loaded" line.
//   - The CLI's list of example URLs, one per operation, is not printed:
//     generating it takes longer than loading some documents.
//   - Responses are not validated (the test judges requests only).
//   - A validator that throws (Prism 5.14.2 does on some header values)
//     has the request refused with a 422 and is reported (below), where the
//     CLI's process would die of the unhandled rejection.
//
// Every request is checked as by `prism mock --errors`: routing (404/405),
// security, then path, query, header and body against the document. The
// verdict of Prism's own router and validators on a request that carries
// the header x-prism-exchange: ID (unique within the process) is also
// printed on stdout, one JSON line per request, before the answer is sent:
//
//   {"exchange":"ID","route":{"type":"NO_PATH_MATCHED_ERROR","title":"...","detail":"..."}}
//   {"exchange":"ID","operation":OPERATION,"security":[VIOLATION...],"input":[VIOLATION...],
//    "compileErrors":["..."]}
//   {"exchange":"ID","error":"Prism's validator threw: ..."}
//
// where OPERATION is the operation Prism matched, {"method":"post",
// "path":"/pets","body":{"required":true,"mediaTypes":["application/json"]}}
// (body null when it takes none), a VIOLATION is {"path":["body","name"],
// "code":"required","message":"...","severity":"error"|"warning"|...}, and
// compileErrors are the schemas Prism could not compile and so did not
// check (it says nothing of them itself). It holds even when Prism then
// fails to make up a response (an operation with no responses, an example
// it cannot serialize), which would hide the violations from the answer.
'use strict';

const fs = require('fs');
const path = require('path');
const { Worker } = require('worker_threads');
const Ajv = require('ajv/dist/core').default;
const $RefParser = require('@stoplight/json-schema-ref-parser');
const { bundleTarget, decycle } = require('@stoplight/json');
const { transformOas2Operations } = require('@stoplight/http-spec/oas2/operation');
const { transformOas3Operations } = require('@stoplight/http-spec/oas3/operation');
const { createServer } = require('@stoplight/prism-http-server');
const { createLogger } = require('@stoplight/prism-core');
const { default: route } = require('@stoplight/prism-http/dist/router');
const { validateInput, validateSecurity } = require('@stoplight/prism-http/dist/validator');

const EXCHANGE_HEADER = 'x-prism-exchange';
const SEVERITY = ['error', 'warning', 'information', 'hint'];

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

// dereference is the first step of prism-http's getHttpOperationsFromSpec
// (5.12.0), in one of three modes: "dereference" as Prism does it,
// "ignore" leaving the $refs that close a cycle as they are, and "auto"
// (the default): Prism's way in a worker thread given budgetMs, "ignore" if
// it does not finish in time. It resolves to the dereferenced document and
// the mode that made it.
async function dereference(doc, circular, budgetMs) {
  if (circular === 'ignore') {
    return { result: await new $RefParser().dereference(doc, { dereference: { circular: 'ignore' } }), circular };
  }
  if (circular === 'dereference') return { result: await new $RefParser().dereference(doc), circular };
  const worker = new Worker(path.join(__dirname, 'dereference.cjs'), { workerData: { doc } });
  const outcome = await new Promise(resolve => {
    const timer = setTimeout(() => resolve({ timeout: true }), budgetMs);
    worker.once('message', m => { clearTimeout(timer); resolve(m); });
    worker.once('error', err => { clearTimeout(timer); resolve({ error: err }); });
  });
  await worker.terminate();
  if (outcome.timeout) return dereference(doc, 'ignore');
  if (outcome.error) throw new Error(`dereferencing: ${outcome.error && outcome.error.message ? outcome.error.message : outcome.error}`);
  return { result: outcome.result, circular: 'dereference' };
}

// loadOperations is the rest of getHttpOperationsFromSpec: decycle,
// transform every operation, and bundle into each the nodes its remaining
// $refs point to.
function loadOperations(dereferenced) {
  const result = decycle(dereferenced);
  let operations;
  if (result.swagger !== undefined) operations = transformOas2Operations(result);
  else if (result.openapi !== undefined) operations = transformOas3Operations(result);
  else throw new Error('not an OpenAPI document (no swagger or openapi key)');
  return operations.map(op =>
    bundleTarget({ document: { ...result, __target__: op }, path: '#/__target__', cloneDocument: false }));
}

// watchCompiles records, while a request is judged, every schema Ajv fails
// to compile. Prism's validator swallows such a failure and checks nothing
// against that schema (a pattern JavaScript's u-mode rejects, a $ref it
// cannot resolve): the request then looks valid. The failure is rethrown,
// so Prism behaves as before; the verdict reports it.
function watchCompiles() {
  const compile = Ajv.prototype.compile;
  let current = null;
  Ajv.prototype.compile = function (...args) {
    try {
      return compile.apply(this, args);
    } catch (err) {
      if (current) current.push(String(err && err.message ? err.message : err).slice(0, 300));
      throw err;
    }
  };
  return judge => {
    current = [];
    try {
      return { result: judge(), compileErrors: current };
    } finally {
      current = null;
    }
  };
}

// verdicts wraps Prism's router and validators: each reports what it found
// about a request that names its exchange, then returns Prism's own result
// unchanged. Security is checked before the input, so the input check
// prints both.
function verdicts(emit) {
  const security = new Map();
  const watched = watchCompiles();
  const idOf = element => {
    const h = element && element.headers;
    return h && typeof h[EXCHANGE_HEADER] === 'string' ? h[EXCHANGE_HEADER] : undefined;
  };
  const violations = result =>
    result._tag === 'Left'
      ? result.left.map(v => ({ path: v.path || [], code: v.code === undefined ? '' : String(v.code), message: v.message, severity: SEVERITY[v.severity] || String(v.severity) }))
      : [];
  // describe names the operation the request was matched to, with the
  // body media types it declares.
  const describe = op => {
    const body = op.request && op.request.body;
    return {
      method: op.method,
      path: op.path,
      body: body ? { required: !!body.required, mediaTypes: (body.contents || []).map(c => c.mediaType) } : null,
    };
  };
  return {
    route(args) {
      const result = route(args);
      const id = idOf(args.input);
      if (id !== undefined && result._tag === 'Left') {
        const e = result.left;
        emit({ exchange: id, route: { type: String(e.name).replace(/^.*#/, ''), title: e.message, detail: e.detail || '' } });
      }
      return result;
    },
    validateSecurity(args) {
      const result = validateSecurity(args);
      const id = idOf(args.element);
      if (id !== undefined) security.set(id, violations(result));
      return result;
    },
    validateInput(args) {
      const id = idOf(args.element);
      let result, compileErrors;
      try {
        ({ result, compileErrors } = watched(() => validateInput(args)));
      } catch (err) {
        // A validator that throws would end the process (an unhandled
        // rejection): report it, and refuse the request instead.
        const message = `Prism's validator threw: ${err && err.stack ? err.stack.split('\n').slice(0, 3).join(' ') : err}`;
        if (id !== undefined) emit({ exchange: id, error: message });
        security.delete(id);
        return { _tag: 'Left', left: [{ code: 'exception', message, severity: 0 }] };
      }
      if (id !== undefined) {
        emit({ exchange: id, operation: describe(args.resource), security: security.get(id) || [], input: violations(result), compileErrors });
        security.delete(id);
      }
      return result;
    },
  };
}

// serve loads a document (pruned to paths when given) and serves Prism's
// mock of it on a new port of 127.0.0.1.
async function serve(docPath, paths, circular, budgetMs, emit) {
  const started = Date.now();
  let doc = await new $RefParser().parse(path.resolve(docPath));
  if (paths) doc = prune(doc, paths);
  // Relative $refs resolve against the current directory when the parser is
  // given an object: make that the document's (loads run one at a time).
  process.chdir(path.dirname(path.resolve(docPath)));
  const deref = await dereference(doc, circular, budgetMs);
  const operations = loadOperations(deref.result);
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
    components: { logger, ...verdicts(emit) },
  });
  const url = await server.listen(0, '127.0.0.1');
  return { server, info: { url, operations: operations.length, circular: deref.circular, loadMs: Date.now() - started } };
}

// serveCommands runs the --serve protocol (see the top of the file): one
// command at a time, so that a load has the process to itself.
async function serveCommands(circular, budgetMs, emit) {
  const servers = new Map();
  const lines = require('readline').createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let cmd;
    try {
      cmd = JSON.parse(line);
    } catch (err) {
      emit({ error: `not a JSON command: ${err.message}` });
      continue;
    }
    if (cmd.load !== undefined) {
      try {
        const { server, info } = await serve(cmd.doc, cmd.paths, cmd.circular || circular, cmd.budgetMs || budgetMs, emit);
        servers.set(cmd.load, server);
        emit({ loaded: cmd.load, ...info });
      } catch (err) {
        emit({ loaded: cmd.load, error: String(err && err.stack ? err.stack.split('\n').slice(0, 4).join(' ') : err) });
      }
    } else if (cmd.close !== undefined) {
      const server = servers.get(cmd.close);
      servers.delete(cmd.close);
      // Not awaited: close waits for idle keep-alive connections to time out.
      if (server) server.close().catch(() => {});
      emit({ closed: cmd.close });
    } else {
      emit({ error: `unknown command ${line}` });
    }
  }
  for (const server of servers.values()) await server.close().catch(() => {});
}

async function main() {
  const usage = 'usage: node mock.cjs [--circular=auto|dereference|ignore] [--budget-ms=N] (--serve | DOC [PATHS.json])';
  const args = process.argv.slice(2);
  let circular = 'auto';
  let budgetMs = 10000;
  let commands = false;
  while (args[0] && args[0].startsWith('--')) {
    const arg = args.shift();
    let m;
    if ((m = /^--circular=(auto|dereference|ignore)$/.exec(arg))) circular = m[1];
    else if ((m = /^--budget-ms=(\d+)$/.exec(arg))) budgetMs = Number(m[1]);
    else if (arg === '--serve') commands = true;
    else throw new Error(usage);
  }
  const emit = v => process.stdout.write(JSON.stringify(v) + '\n');
  if (commands) {
    if (args.length) throw new Error(usage);
    await serveCommands(circular, budgetMs, emit);
    process.exit(0);
  }
  const [docPath, pathsFile] = args;
  if (!docPath) throw new Error(usage);
  const paths = pathsFile ? JSON.parse(fs.readFileSync(pathsFile, 'utf8')) : undefined;
  const { info } = await serve(docPath, paths, circular, budgetMs, emit);
  emit(info);
}

main().catch(err => {
  process.stderr.write(`mock.cjs: ${process.argv.slice(2).join(' ')}: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
