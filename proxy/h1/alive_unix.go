//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package h1

import (
	"errors"
	"net"
	"syscall"
)

// alive peeks at an idle connection without blocking: a connection the
// server closed (EOF), reset, or sent unasked-for bytes on is not reused.
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	open := false
	var b [1]byte
	// Control, not Read: no readiness wait, and the deadline the last
	// exchange left on the connection does not apply.
	err = rc.Control(func(fd uintptr) {
		_, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		open = err != nil && (errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK))
	})
	return open && err == nil
}
