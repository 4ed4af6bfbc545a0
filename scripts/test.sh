#!/usr/bin/env bash
# The project's test command (README: "Run the tests"). On a fresh machine it
# needs Go, npm and network access to the Go module proxy, the npm registry
# and (for PostgreSQL, installed and started by scripts/postgres.sh as root)
# Debian's packages; it fetches what else it needs (the OpenAPI corpus, the
# pinned conformance suite and Node 22) into caches under /tmp.
#
#   scripts/test.sh            everything: vet, race tests, corpus, Prism, fuzz smoke, conformance
#   QUICK=1 scripts/test.sh    skip the corpus fetch, the Prism run, fuzzing and conformance
#
# Environment: MCPGATE_CORPUS (default /tmp/mcpgate-corpus) is where the
# corpus is built; CORPUS_CACHE (default /tmp/corpus-cache) caches tarballs.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
step() { printf '\n=== %s\n' "$*"; }

step "gofmt"
unformatted="$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"
if [[ -n "$unformatted" ]]; then echo "not gofmt'ed:"; echo "$unformatted"; exit 1; fi

# The repository holds two modules: mcpgate itself and, nested in bench/, the
# comparison servers of bench/run.sh (they need other MCP libraries, which
# stay out of the library's go.mod). Both are tidy, vetted and tested; a change
# to mcpgate's requirements may need "cd bench && go mod tidy" too.
MODULES=(. bench)

step "go mod tidy -diff (every module)"
for m in "${MODULES[@]}"; do (cd "$m" && go mod tidy -diff); done

step "go vet (every module)"
for m in "${MODULES[@]}"; do (cd "$m" && go vet ./...); done

if [[ -z "${MCPGATE_TEST_POSTGRES:-}" ]]; then
  step "PostgreSQL for the store and cluster tests (scripts/postgres.sh)"
  if pg_env="$(scripts/postgres.sh)"; then
    eval "$pg_env"
  elif [[ -n "${CI:-}" ]]; then
    echo "test.sh: could not start PostgreSQL" >&2
    exit 1
  else
    echo "test.sh: PostgreSQL is not available here: its tests will be skipped"
  fi
fi

if [[ -z "${QUICK:-}" ]]; then
  # Fetched before the unit tests: discovery's evaluation reads GitHub's,
  # Stripe's and Microsoft Graph's documents from it.
  step "OpenAPI corpus: 59 real documents (fetched and cached on first use)"
  export MCPGATE_CORPUS="${MCPGATE_CORPUS:-/tmp/mcpgate-corpus}"
  CORPUS_CACHE="${CORPUS_CACHE:-/tmp/corpus-cache}" scripts/corpus/get.sh "$MCPGATE_CORPUS"
fi

step "go test -race ./... (every module; the corpus and Prism tests run next, without -race)"
for m in "${MODULES[@]}"; do (cd "$m" && go test -race -count=1 -timeout 20m -skip '^(TestCorpus|TestPrismCorpus|TestToolsCorpus)$' ./...); done

if [[ -z "${QUICK:-}" ]]; then
  step "OpenAPI corpus: every document loads and gives valid tools (openapi/corpus_test.go)"
  CORPUS_CACHE="${CORPUS_CACHE:-/tmp/corpus-cache}" scripts/corpus/test.sh
  step "the tool set's encodings on every tool of GitHub, Stripe and Graph (mcp/schemaroot_test.go)"
  go test -count=1 -run '^TestToolsCorpus$' ./mcp

  step "Prism: the corpus through the real binary, every request checked by Stoplight Prism (e2e/prism_test.go)"
  # -v: the report (per document, every refused request, the valid
  # fraction) is printed even when the test passes.
  go test -v -count=1 -timeout 20m -run '^TestPrismCorpus$' ./e2e | grep -Ev '^=== (RUN|PAUSE|CONT|NAME)'
fi

if [[ -z "${QUICK:-}" ]]; then
  step "fuzz smoke (a fixed number of inputs per target, about 10 s each)"
  # Counts, not durations: a duration's deadline can fail a run that found
  # nothing ("context deadline exceeded", Go's fuzzing coordinator,
  # golang/go#75804, not fixed in Go 1.26; a CI run failed so). Each count
  # is about what 10 s gave on a 2-core machine; FuzzParseGenerate's pace
  # varies most, 3 to 200 inputs a second (the engine, not the target: no
  # input took 300 ms).
  go test -run '^$' -fuzz '^FuzzDecodeMessage$' -fuzztime 40000x ./mcp
  go test -run '^$' -fuzz '^FuzzEncodeToolWire$' -fuzztime 100000x ./mcp
  go test -run '^$' -fuzz '^FuzzOpen$' -fuzztime 150000x ./mrtr
  go test -run '^$' -fuzz '^FuzzParseGenerate$' -fuzztime 300x ./openapi
  go test -run '^$' -fuzz '^FuzzAppendTree$' -fuzztime 50000x ./openapi
  go test -run '^$' -fuzz '^FuzzBuildRequest$' -fuzztime 50000x ./proxy
  go test -run '^$' -fuzz '^FuzzIntentParts$' -fuzztime 50000x ./discovery

  step "MCP conformance suite (2026-07-28)"
  scripts/conformance.sh

  step "MCP conformance suite (2025-11-25 clients, same server)"
  scripts/conformance.sh -v 2025-11-25
fi
