#!/usr/bin/env bash
# test.sh [go test flags] — build (or refresh) the OpenAPI corpus with get.sh
# and run the openapi package's corpus test over it. It fails, never skips,
# when the corpus cannot be built or is incomplete. The test also compiles
# every generated schema with Ajv 2020 in unicode mode (scripts/corpus/ajv,
# installed from npm into the temp dir on first use: node and npm needed)
# and fails when any tool's schema does not compile there.
#
# Env:
#   MCPGATE_CORPUS  corpus directory (default $XDG_CACHE_HOME/mcpgate/corpus,
#                   i.e. ~/.cache/mcpgate/corpus)
#   CORPUS_CACHE    npm tarball cache for get.sh (default next to the corpus);
#                   a warm cache makes get.sh take ~20 s and need no network
#
# Example: scripts/corpus/test.sh -v
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BASE=${XDG_CACHE_HOME:-$HOME/.cache}/mcpgate
export MCPGATE_CORPUS=${MCPGATE_CORPUS:-$BASE/corpus}
export CORPUS_CACHE=${CORPUS_CACHE:-$BASE/corpus-cache}

"$ROOT/scripts/corpus/get.sh" "$MCPGATE_CORPUS"
cd "$ROOT"
exec go test -run '^TestCorpus$' -count=1 -timeout 30m "$@" ./openapi/
