#!/usr/bin/env node
// check.cjs FILE... — compile every tool schema the way an ECMA-262 client
// does: Ajv 2020 (the validator the MCP TypeScript SDK uses) with
// strict=false and unicodeRegExp=true, plus `new RegExp(p, "u")` on every
// `pattern` and `patternProperties` key.
//
// A tool's schema is its root plus the $defs it references. Compiling
// fails on something local to one subschema (a keyword value the
// meta-schema refuses, a pattern, a $ref that resolves to nothing), so each
// schema is checked in parts: the root with its $defs replaced by `true`
// stubs, and each distinct $defs entry (by name and text, once per FILE)
// as a root of its own, with stubs for the entries it references. Within a
// document most tools share most $defs, so this costs about the size of
// the distinct schemas instead of the sum of every tool's closure (for
// Microsoft Graph: a few MB instead of 167 MB), and fails exactly when
// compiling the whole schema would.
//
// Each FILE is a tools/list result ({"tools":[...]}, as `mcpgate tools`
// writes it) or NDJSON lines {"tool": "...", "id": "...", "schema": {...}}
// (as the Go corpus test writes them). Prints one JSON object on stdout:
//   {"schemas": N, "tools": N, "failedSchemas": N, "failedTools": N,
//    "failures": [{"id": "...", "error": "..."}]}   (at most 50 failures)
// and exits 0 (the caller decides what a failure means); exit 2 on bad input.
"use strict";
const fs = require("fs");
const Ajv2020 = require("ajv/dist/2020").default;

function newAjv() {
  return new Ajv2020({ strict: false, unicodeRegExp: true, allErrors: false, validateFormats: false, code: { optimize: false } });
}

// Keywords whose value is data, not a schema, and keywords whose value maps
// names (which may be anything, "default" included) to schemas.
const DATA = new Set(["enum", "const", "default", "examples"]);
const SCHEMA_MAPS = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);

// walk calls visit(key, value) for every keyword of every subschema.
function walk(v, visit) {
  if (Array.isArray(v)) {
    for (const e of v) walk(e, visit);
    return;
  }
  if (!v || typeof v !== "object") return;
  for (const [k, e] of Object.entries(v)) {
    visit(k, e);
    if (DATA.has(k)) continue;
    if (SCHEMA_MAPS.has(k) && e && typeof e === "object" && !Array.isArray(e)) {
      for (const sub of Object.values(e)) walk(sub, visit);
    } else {
      walk(e, visit);
    }
  }
}

// patterns returns every regular expression source in a schema.
function patterns(schema, out) {
  walk(schema, (k, e) => {
    if (k === "pattern" && typeof e === "string") out.push(e);
    if (k === "patternProperties" && e && typeof e === "object" && !Array.isArray(e)) out.push(...Object.keys(e));
  });
  return out;
}

// One Ajv for every compilation (its meta-schema validator is compiled
// once); each schema is removed from its cache after use.
let ajv = newAjv();

function compileOne(schema) {
  for (const p of patterns(schema, [])) {
    try {
      new RegExp(p, "u");
    } catch (e) {
      return `pattern ${JSON.stringify(p)}: ${e.message}`;
    }
  }
  try {
    ajv.compile(schema);
  } catch (e) {
    ajv = newAjv(); // a failed compilation may leave state behind
    return e.message;
  } finally {
    if (typeof schema === "object" && schema !== null) ajv.removeSchema(schema);
  }
  return null;
}

// defRefs returns the $defs names a schema references.
function defRefs(schema, out) {
  walk(schema, (k, e) => {
    if (k === "$ref" && typeof e === "string" && e.startsWith("#/$defs/")) {
      out.add(decodeURIComponent(e.slice(8)).replace(/~1/g, "/").replace(/~0/g, "~"));
    }
  });
  return out;
}

// withStubs returns schema (an object, its own $defs left out) as a root
// whose $defs are `true` for every name in refs.
function withStubs(schema, refs) {
  const stubs = {};
  for (const name of refs) stubs[name] = true;
  const root = Object.assign({}, schema);
  root.$defs = stubs;
  return root;
}

// part compiles one part (a root or a $defs entry) and returns its verdict
// and the $defs names it references.
function part(schema) {
  const refs = defRefs(schema, new Set());
  return { err: compileOne(withStubs(schema, refs)), refs };
}

// check compiles one tool schema in parts; cache holds the verdict of each
// $defs entry already seen in this file. A reference to a $defs entry the
// tool does not carry fails as Ajv would fail on the whole schema.
function check(schema, cache) {
  if (schema === null || typeof schema !== "object" || Array.isArray(schema)) return compileOne(schema);
  const defs = schema.$defs && typeof schema.$defs === "object" ? schema.$defs : {};
  const rootOnly = Object.assign({}, schema);
  delete rootOnly.$defs;
  const root = part(rootOnly);
  if (root.err !== null) return root.err;
  const refs = [...root.refs];
  for (const [name, def] of Object.entries(defs)) {
    if (typeof def !== "object" || def === null) continue;
    const key = name + "\0" + JSON.stringify(def);
    if (!cache.has(key)) cache.set(key, part(def));
    const p = cache.get(key);
    if (p.err !== null) return `$defs/${name}: ${p.err}`;
    refs.push(...p.refs);
  }
  for (const name of refs) {
    if (!Object.prototype.hasOwnProperty.call(defs, name)) return `can't resolve reference #/$defs/${name} from id #`;
  }
  return null;
}

function* entries(file) {
  const text = fs.readFileSync(file, "utf8");
  const trimmed = text.trimStart();
  if (trimmed.startsWith("{\"tools\"") || trimmed.startsWith("{ \"tools\"")) {
    const list = JSON.parse(text).tools;
    for (const t of list) {
      yield { tool: `${file}:${t.name}`, id: `${file}:${t.name}/input`, schema: t.inputSchema };
      if (t.outputSchema !== undefined) yield { tool: `${file}:${t.name}`, id: `${file}:${t.name}/output`, schema: t.outputSchema };
    }
    return;
  }
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    const e = JSON.parse(line);
    yield { tool: e.tool || e.id, id: e.id, schema: e.schema };
  }
}

function main(files) {
  if (files.length === 0) {
    process.stderr.write("usage: check.cjs FILE...\n");
    process.exit(2);
  }
  const res = { schemas: 0, tools: 0, failedSchemas: 0, failedTools: 0, failures: [] };
  const tools = new Set();
  const failedTools = new Set();
  for (const file of files) {
    const cache = new Map();
    try {
      for (const e of entries(file)) {
        res.schemas++;
        tools.add(e.tool);
        const err = check(e.schema, cache);
        if (err === null) continue;
        res.failedSchemas++;
        failedTools.add(e.tool);
        if (res.failures.length < 50) res.failures.push({ id: e.id, error: err.slice(0, 300) });
      }
    } catch (e) {
      process.stderr.write(`check.cjs: ${file}: ${e.message}\n`);
      process.exit(2);
    }
  }
  res.tools = tools.size;
  res.failedTools = failedTools.size;
  process.stdout.write(JSON.stringify(res) + "\n");
}

main(process.argv.slice(2));
