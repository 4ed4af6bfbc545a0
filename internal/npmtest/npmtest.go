// Package npmtest gives tests the Node programs they drive (an SDK client,
// an authorization server): it finds node and npm, and installs a test
// directory's locked dependencies into a cache outside the repository.
//
// Invariants: the repository is never written; an install is named after
// the hash of package.json and package-lock.json, so a changed lock gets a
// fresh one; concurrent runs never see a half-installed tree (each installs
// privately, then renames into place). Without node or npm a test is
// skipped, except in CI (env CI non-empty), where it fails.
package npmtest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// NeedTool returns the path of program name; without it the test is
// skipped (failed in CI), the message saying what needed it.
func NeedTool(t testing.TB, name, forWhat string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is required in CI (CI=%q) for %s: %v", name, os.Getenv("CI"), forWhat, err)
		}
		t.Skipf("%s not found on PATH: skipping %s (install Node.js >= 20 with npm to run it)", name, forWhat)
	}
	return p
}

// Install runs npm ci for src's package.json and package-lock.json in a
// cache directory under the system temp dir (prefix, then the lock's hash)
// and returns it. marker is a file under node_modules whose presence means
// the install is complete.
func Install(t testing.TB, npm, src, prefix, marker string) string {
	t.Helper()
	pkg, err := os.ReadFile(filepath.Join(src, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	lock, err := os.ReadFile(filepath.Join(src, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(append(append([]byte(nil), pkg...), lock...))
	dir := filepath.Join(os.TempDir(), prefix+hex.EncodeToString(sum[:8]))
	done := filepath.Join(dir, "node_modules", marker)
	if _, err := os.Stat(done); err == nil {
		return dir
	}
	tmp, err := os.MkdirTemp(os.TempDir(), prefix+"install-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	for name, b := range map[string][]byte{"package.json": pkg, "package-lock.json": lock} {
		if err := os.WriteFile(filepath.Join(tmp, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "npm_config_cache="+filepath.Join(os.TempDir(), "mcpgate-npm-cache"), "npm_config_update_notifier=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", tmp, err, out)
	}
	if err := os.Rename(tmp, dir); err != nil {
		if _, statErr := os.Stat(done); statErr != nil { // not just another run that won the race
			t.Fatalf("moving the install into place: %v", err)
		}
	}
	return dir
}
