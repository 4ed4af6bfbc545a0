#!/usr/bin/env node
// check.cjs FILE... — compile every tool schema the way an ECMA-262 client
// does: Ajv 2020 (the validator the MCP TypeScript SDK uses) with
// strict=false and unicodeRegExp=true, plus `new RegExp(p, "u")` on every
// `pattern` and `patternProperties` key found anywhere in the schema (Ajv
// compiles only the subschemas it reaches).
//
// Each FILE is a tools/list result ({"tools":[...]}, as `mcpgate tools`
// writes it) or NDJSON lines {"id": "...", "schema": {...}} (as the Go
// corpus test writes them). Prints one JSON object on stdout:
//   {"schemas": N, "tools": N, "failedSchemas": N, "failedTools": N,
//    "failures": [{"id": "...", "error": "..."}]}   (at most 50 failures)
// and exits 0 (the caller decides what a failure means); exit 2 on bad input.
"use strict";
const fs = require("fs");
const Ajv2020 = require("ajv/dist/2020").default;

function newAjv() {
  return new Ajv2020({ strict: false, unicodeRegExp: true, allErrors: false, validateFormats: false });
}

// patterns returns every regular expression source in a schema value.
function patterns(v, out) {
  if (Array.isArray(v)) {
    for (const e of v) patterns(e, out);
  } else if (v && typeof v === "object") {
    for (const [k, e] of Object.entries(v)) {
      if (k === "pattern" && typeof e === "string") out.push(e);
      if (k === "patternProperties" && e && typeof e === "object" && !Array.isArray(e)) out.push(...Object.keys(e));
      // enum/const/default/examples hold data, not schemas.
      if (k === "enum" || k === "const" || k === "default" || k === "examples") continue;
      patterns(e, out);
    }
  }
  return out;
}

function check(schema) {
  for (const p of patterns(schema, [])) {
    try {
      new RegExp(p, "u");
    } catch (e) {
      return `pattern ${JSON.stringify(p)}: ${e.message}`;
    }
  }
  try {
    newAjv().compile(schema);
  } catch (e) {
    return e.message;
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
    let list;
    try {
      list = entries(file);
      for (const e of list) {
        res.schemas++;
        tools.add(e.tool);
        const err = check(e.schema);
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
