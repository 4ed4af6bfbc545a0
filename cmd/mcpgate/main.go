// Command mcpgate serves an HTTP API described by OpenAPI to AI agents over
// the Model Context Protocol, one tool per API operation.
//
// main.go only wires: the command line is parsed by kong from the command
// structs (each subcommand in its own file); the settings of serve and stdio
// are gateway.Config, whose tags are the one table of flags, MCPGATE_*
// variables and YAML keys (package internal/settings). Exit codes: 0 ok, 1
// failure (or breaking drift in "check"), 2 usage error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	"github.com/mcpgate/mcpgate/gateway"
	"github.com/mcpgate/mcpgate/internal/settings"
)

// cli is the command line: one field per subcommand.
type cli struct {
	Version kong.VersionFlag `help:"Print the version and exit." short:"V" env:"-"`

	Serve      serveCmd   `cmd:"" help:"Serve an OpenAPI-described API as MCP over Streamable HTTP (--demo for the built-in demo)."`
	Stdio      stdioCmd   `cmd:"" help:"Serve the same over stdio, for desktop clients that start the server as a subprocess."`
	Tools      toolsCmd   `cmd:"" help:"Generate MCP tools (a tools/list result or a manifest) from an OpenAPI document."`
	Check      checkCmd   `cmd:"" help:"Compare an OpenAPI document with a committed manifest (CI drift gate)."`
	Audit      auditCmd   `cmd:"" help:"List the audit records serve kept (--audit-sink store or file:PATH), newest first, filtered."`
	Grants     grantsCmd  `cmd:"" help:"List or revoke the users' own OAuth grants to the APIs (credentials mode oauth)."`
	VersionCmd versionCmd `cmd:"" name:"version" help:"Print the version."`
}

// streams are the command's standard streams (bound into every Run).
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// cliArgs are the command line as given (bound into every Run): serve reads
// its settings again from them on SIGHUP.
type cliArgs []string

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], streams{os.Stdin, os.Stdout, os.Stderr})
	stop()
	os.Exit(code)
}

// exitError carries an exit code with the error already reported.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

// exited is how kong's Exit (after --help or --version) unwinds to run.
type exited struct{ code int }

// run parses args and runs the command, returning the exit code.
func run(ctx context.Context, args []string, io streams) (code int) {
	if len(args) == 0 {
		run(ctx, []string{"--help"}, io)
		return 2
	}
	defer func() {
		switch r := recover().(type) {
		case nil:
		case exited:
			code = r.code
		default:
			panic(r)
		}
	}()
	kctx, err := parse(ctx, args, io)
	if err != nil {
		var pe *kong.ParseError
		if errors.As(err, &pe) {
			fmt.Fprintf(io.stderr, "mcpgate: %v%s (see mcpgate %s --help)\n", err, fromEnv(err, args), commandName(pe.Context))
			return 2
		}
		fmt.Fprintf(io.stderr, "mcpgate: %v\n", err)
		return 1
	}
	err = kctx.Run()
	var ee *exitError
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue):
		fmt.Fprintf(io.stderr, "mcpgate %s: %v (see mcpgate %s --help)\n", kctx.Command(), err, kctx.Command())
		return 2
	default:
		fmt.Fprintf(io.stderr, "mcpgate %s: %v\n", kctx.Command(), err)
		return 1
	}
}

// parse reads the settings file, builds the parser and parses args. After
// --help or --version it panics with exited (run recovers it).
func parse(ctx context.Context, args []string, io streams) (*kong.Context, error) {
	file, err := configFile(args)
	if err != nil {
		return nil, err
	}
	parser, err := newParser(ctx, io, file)
	if err != nil {
		panic(err) // the command structs are malformed: a programming error
	}
	kctx, err := parser.Parse(args)
	if err == nil {
		kctx.Bind(cliArgs(args))
	}
	return kctx, err
}

func newParser(ctx context.Context, io streams, file *settings.File) (*kong.Kong, error) {
	opts := []kong.Option{
		kong.Name("mcpgate"),
		kong.Description("mcpgate puts an HTTP API described by OpenAPI in front of AI agents, as MCP tools."),
		kong.Writers(io.stdout, io.stderr),
		kong.Exit(func(code int) { panic(exited{code}) }),
		kong.DefaultEnvars(strings.TrimSuffix(gateway.EnvPrefix, "_")),
		kong.PostBuild(sameToolsEnvars),         // after DefaultEnvars
		kong.WithHyphenPrefixedParameters(true), // --gc-headroom -1
		kong.NamedMapper("yaml", settings.Mapper{}),
		kong.Vars{"version": "mcpgate " + gateway.Version(), "outcomes": outcomesVar()},
		kong.BindTo(ctx, (*context.Context)(nil)),
		kong.Bind(io),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, NoExpandSubcommands: true}),
	}
	if file != nil {
		opts = append(opts, kong.Resolvers(file))
	}
	return kong.New(&cli{}, opts...)
}

// sameToolsEnvars gives the generation flags of tools and check
// (--include-methods) the variables of serve's (--tools-include-methods,
// MCPGATE_TOOLS_INCLUDE_METHODS): one setting, one variable, so that a
// check regenerates exactly what serve serves.
func sameToolsEnvars(k *kong.Kong) error {
	serve := map[string][]string{}
	for _, n := range k.Model.Children {
		if n.Name == "serve" {
			for _, f := range n.Flags {
				serve[f.Name] = f.Envs
			}
		}
	}
	for _, n := range k.Model.Children {
		if n.Name != "tools" && n.Name != "check" {
			continue
		}
		for _, f := range n.Flags {
			if envs, ok := serve["tools-"+f.Name]; ok {
				f.Envs, f.Value.Tag.Envs = envs, envs
			}
		}
	}
	return nil
}

func commandName(ctx *kong.Context) string {
	if ctx == nil || ctx.Command() == "" {
		return "<command>"
	}
	return strings.Fields(ctx.Command())[0]
}

var flagInError = regexp.MustCompile(`--([a-z0-9-]+)`)

// fromEnv names the variable a bad value came from, when the flag an error
// names was not on the command line but its variable is set.
func fromEnv(err error, args []string) string {
	m := flagInError.FindStringSubmatch(err.Error())
	if m == nil {
		return ""
	}
	for _, a := range args {
		if a == "--"+m[1] || strings.HasPrefix(a, "--"+m[1]+"=") {
			return ""
		}
	}
	list, _ := gateway.Settings()
	if s := settings.Index(append(list, toolsSettings()...))[m[1]]; s != nil {
		for _, env := range s.Env {
			if v, ok := os.LookupEnv(env); ok {
				return fmt.Sprintf(" (from %s=%q)", env, v)
			}
		}
	}
	return ""
}

// usageError is a bad invocation found after parsing: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// configFile loads the YAML settings file named by --config (or
// MCPGATE_CONFIG) before kong parses, so that it can resolve every flag the
// command line and the environment leave unset.
func configFile(args []string) (*settings.File, error) {
	path, _ := os.LookupEnv(gateway.EnvPrefix + "CONFIG")
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			path = v
		} else if a == "--config" && i+1 < len(args) {
			path = args[i+1]
		}
	}
	if path == "" {
		return nil, nil
	}
	list, err := gateway.Settings()
	if err != nil {
		return nil, err
	}
	return settings.LoadFile(path, &gateway.Config{}, append(list, toolsSettings()...))
}
