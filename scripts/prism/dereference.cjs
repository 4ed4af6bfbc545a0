// dereference.cjs: the worker thread of mock.cjs's "auto" circular mode. It
// dereferences workerData.doc as Prism does (@stoplight/json-schema-ref-parser,
// cycles made into cyclic objects) and posts {result} or {error} back; the
// main thread gives it a time budget and terminates it when that runs out.
'use strict';

const { parentPort, workerData } = require('worker_threads');
const $RefParser = require('@stoplight/json-schema-ref-parser');

new $RefParser().dereference(workerData.doc).then(
  result => parentPort.postMessage({ result }),
  err => parentPort.postMessage({ error: err && err.message ? err.message : String(err) }),
);
