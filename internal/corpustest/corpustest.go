// Package corpustest locates the OpenAPI test corpus (scripts/corpus/get.sh)
// for the tests that read it. It owns one decision: without MCPGATE_CORPUS
// such a test is skipped, except under CI (CI non-empty), where it fails, so
// that a corpus test can never pass in CI by not running.
package corpustest

import (
	"os"
	"testing"
)

// Dir returns MCPGATE_CORPUS, a directory; unset, it skips t (fails it
// under CI).
func Dir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("MCPGATE_CORPUS")
	if dir == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("MCPGATE_CORPUS is not set but CI is: run scripts/corpus/get.sh DIR and set MCPGATE_CORPUS=DIR")
		}
		t.Skip("MCPGATE_CORPUS is not set (run scripts/corpus/get.sh DIR and set MCPGATE_CORPUS=DIR)")
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("MCPGATE_CORPUS=%s is not a directory: %v", dir, err)
	}
	return dir
}
