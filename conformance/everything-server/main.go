// Command everything-server is the fixture server the official MCP
// conformance suite drives: it exposes every tool, resource and prompt that
// the suite's 2026-07-28 scenarios expect, built on package mcp exactly as a
// library user would build a server.
//
//	go run ./conformance/everything-server -addr 127.0.0.1:3001
//	conformance/run.sh http://127.0.0.1:3001/mcp
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcpgate/mcpgate/mcp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:3001", "listen address (host:port); keep it on loopback")
	flag.Parse()
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, logger); err != nil {
		fmt.Fprintln(os.Stderr, "everything-server:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr string, logger *slog.Logger) error {
	srv, rt, err := newServer(logger)
	if err != nil {
		return err
	}
	runCtx, stopRunner := context.WithCancel(context.Background())
	runnerDone := make(chan error, 1)
	go func() { runnerDone <- rt.runner.Run(runCtx) }()
	defer func() { stopRunner(); <-runnerDone }()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	logger.Warn("everything-server listening", "url", "http://"+ln.Addr().String()+"/mcp")
	mux := newMux(srv)
	err = mcp.RunHTTP(ctx, ln, mux, srv, 5*time.Second)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}
