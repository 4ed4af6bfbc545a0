package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/gctune"
	"github.com/mcpgate/mcpgate/internal/settings"
)

// gatewayFlags are the settings of serve and stdio: the config file and
// the gateway's table of settings.
type gatewayFlags struct {
	ConfigPath     string `name:"config" placeholder:"FILE" help:"YAML settings file: every setting below has a key (see docs/settings.md)."`
	gateway.Config `embed:""`
}

type serveCmd struct {
	gatewayFlags
}

type stdioCmd struct {
	gatewayFlags
}

// Help is shown under the flags of serve and stdio.
func (gatewayFlags) Help() string {
	return `Precedence: flags, then MCPGATE_* environment variables, then the --config file, then defaults.
Also read: MCPGATE_SECRET_<SCHEME> (a security scheme's secret with credentials mode static)
and MCPGATE_BEARER_TOKEN (the caller's token in stdio mode).`
}

// Run serves MCP over Streamable HTTP until ctx ends. On SIGHUP it reads
// its settings (file, environment, flags) and every API's document again.
func (c *serveCmd) Run(ctx context.Context, io streams, args cliArgs) error {
	g, logger, err := c.build(ctx, io.stderr)
	if err != nil {
		return err
	}
	defer g.Close()
	go reloadOnHangup(ctx, g, logger, args, io)
	addr := g.Config().Addr
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fail(logger, fmt.Errorf("listen on %s: %w", addr, err))
	}
	return fail(logger, g.Serve(ctx, ln))
}

// Run serves MCP over stdin and stdout until stdin ends.
func (c *stdioCmd) Run(ctx context.Context, io streams, args cliArgs) error {
	if c.Audit.Sink == "stdout" {
		return &usageError{"audit sink stdout cannot be used with stdio: stdout carries MCP (use file:PATH or store)"}
	}
	g, logger, err := c.build(ctx, io.stderr)
	if err != nil {
		return err
	}
	defer g.Close()
	go reloadOnHangup(ctx, g, logger, args, io)
	return fail(logger, g.ServeStdio(ctx, io.stdin, io.stdout))
}

// build makes the logger and the gateway, and starts the GC tuner. Every
// failure is reported once, as one line (one JSON object with --log-format
// json), and returned as an exitError.
func (f *gatewayFlags) build(ctx context.Context, stderr io.Writer) (*gateway.Gateway, *slog.Logger, error) {
	logger := newLogger(f.Log, stderr)
	warnUnknownEnv(logger)
	g, err := gateway.New(ctx, f.Config, logger)
	if err != nil {
		return nil, nil, fail(logger, err)
	}
	if h := g.Config().GCHeadroom; h > 0 {
		go gctune.Run(ctx, uint64(h), time.Second)
	}
	return g, logger, nil
}

// fail logs a fatal error and turns it into exit status 1.
func fail(logger *slog.Logger, err error) error {
	if err == nil {
		return nil
	}
	logger.Error("mcpgate: " + err.Error())
	return &exitError{1}
}

func newLogger(c gateway.LogConfig, w io.Writer) *slog.Logger {
	lvl := slog.LevelInfo
	switch c.Level {
	case "debug":
		lvl = slog.LevelDebug
	case "warn":
		lvl = slog.LevelWarn
	case "error":
		lvl = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: lvl}
	if c.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// warnUnknownEnv warns of MCPGATE_* variables that name no setting: a
// misspelt variable would otherwise be ignored in silence.
func warnUnknownEnv(logger *slog.Logger) {
	list, err := gateway.Settings()
	if err != nil {
		return
	}
	list = append(list, toolsSettings()...)
	list = append(list, settings.Setting{Env: []string{gateway.EnvPrefix + "CONFIG"}})
	for _, name := range settings.UnknownEnv(list, os.Environ(), strings.TrimSuffix(gateway.EnvPrefix, "_"),
		gateway.EnvPrefix+"SECRET_", gateway.EnvPrefix+"BEARER_TOKEN", gateway.EnvPrefix+"TEST_") {
		logger.Warn("unknown environment variable: no setting has this name (see mcpgate serve --help)", "name", name)
	}
}

// reloadOnHangup reloads the gateway on every SIGHUP until ctx ends: the
// settings read again from the same command line, environment and file,
// and every API's document (a change the reload mode would refuse is
// applied: the operator asked).
func reloadOnHangup(ctx context.Context, g *gateway.Gateway, logger *slog.Logger, args cliArgs, io streams) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		logger.Info("SIGHUP: reloading the settings and the documents")
		cfg, err := settingsOf(ctx, args, io)
		if err != nil {
			logger.Error("reload: the settings do not parse; nothing changed", "err", err)
			continue
		}
		_ = g.Reload(ctx, cfg) // the gateway logs why a reload failed or was refused
	}
}

// settingsOf parses args again into the gateway's settings.
func settingsOf(ctx context.Context, args cliArgs, io streams) (cfg *gateway.Config, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	kctx, err := parse(ctx, args, streams{stdin: nil, stdout: io.stderr, stderr: io.stderr})
	if err != nil {
		return nil, err
	}
	switch c := kctx.Selected().Target.Addr().Interface().(type) {
	case *serveCmd:
		return &c.Config, nil
	case *stdioCmd:
		return &c.Config, nil
	}
	return nil, fmt.Errorf("not a serving command")
}
