//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package h1

import (
	"errors"
	"net"
	"syscall"
)

// probe peeks at an idle connection without blocking: a connection the
// server closed (EOF), reset, or sent unasked-for bytes on is not reused.
// It is set up once per connection (its raw connection and the peek
// function are kept), so that a probe costs no allocation; only the
// goroutine that took the connection from the pool uses it.
type probe struct {
	rc   syscall.RawConn // nil: nothing to peek at (not a socket)
	err  error           // the raw connection could not be had
	peek func(fd uintptr)
	open bool
	b    [1]byte
}

func (p *probe) init(nc net.Conn) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	p.rc, p.err = sc.SyscallConn()
	p.peek = p.recv
}

// alive reports whether the connection is open with nothing pending.
func (p *probe) alive() bool {
	switch {
	case p.err != nil:
		return false
	case p.rc == nil:
		return true
	}
	p.open = false
	// Control, not Read: no readiness wait, and the deadline the last
	// exchange left on the connection does not apply.
	err := p.rc.Control(p.peek)
	return p.open && err == nil
}

func (p *probe) recv(fd uintptr) {
	_, _, err := syscall.Recvfrom(int(fd), p.b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	p.open = err != nil && (errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK))
}
