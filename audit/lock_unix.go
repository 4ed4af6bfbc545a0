//go:build unix

package audit

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f, released by the returned func.
func lockFile(f *os.File) (func(), error) {
	fd := int(f.Fd())
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX)
		if err == nil {
			break
		}
		if err != syscall.EINTR {
			return nil, err
		}
	}
	return func() { _ = syscall.Flock(fd, syscall.LOCK_UN) }, nil
}
