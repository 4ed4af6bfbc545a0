//go:build !unix

package audit

import "os"

// lockFile is a no-op where flock is missing: a single O_APPEND write per
// batch is the only guard there.
func lockFile(*os.File) (func(), error) { return func() {}, nil }
