// Command mcpgate serves an HTTP API described by OpenAPI to AI agents over
// the Model Context Protocol, one tool per API operation.
//
// main.go is only the dispatcher: each subcommand lives in its own file with
// its own flag.FlagSet. Exit codes: 0 ok, 1 failure (or breaking drift in
// "check"), 2 usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// command is one subcommand. run gets the arguments after the subcommand
// name; it returns a usageError for bad invocations and flag.ErrHelp after
// printing its help.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands is the subcommand table.
func commands() []command {
	return []command{
		{"serve", "serve an OpenAPI-described API as MCP over Streamable HTTP (--demo for the built-in demo)", runServe},
		{"stdio", "serve the same over stdio", runStdio},
		{"tools", "generate MCP tools (a tools/list result or a manifest) from an OpenAPI document", runTools},
		{"check", "compare an OpenAPI document with a committed manifest (CI drift gate)", runCheck},
		{"version", "print the version", runVersion},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// usageError is a bad invocation: exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{fmt.Sprintf(format, args...)} }

// exitError carries an exit code with an error already reported.
type exitError struct{ code int }

func (e *exitError) Error() string { return fmt.Sprintf("exit status %d", e.code) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, args[1:], stdout, stderr)
		var ue *usageError
		var ee *exitError
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.As(err, &ee):
			return ee.code
		case errors.As(err, &ue):
			fmt.Fprintf(stderr, "mcpgate %s: %v\nRun 'mcpgate %s --help' for usage.\n", c.name, err, c.name)
			return 2
		default:
			fmt.Fprintf(stderr, "mcpgate %s: %v\n", c.name, err)
			return 1
		}
	}
	fmt.Fprintf(stderr, "mcpgate: unknown command %q\n", args[0])
	printUsage(stderr)
	return 2
}

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: mcpgate <command> [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-10s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "\nRun 'mcpgate <command> --help' for the flags of a command.")
}

// newFlagSet returns a FlagSet that reports errors to the caller and prints
// its help, with the usage line and description, to stderr.
func newFlagSet(name, usage, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("mcpgate "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: mcpgate %s %s\n\n%s\n\nFlags:\n", name, usage, description)
		fs.PrintDefaults()
	}
	return fs
}

// parseFlags parses args; a parse error is a usage error, --help is
// flag.ErrHelp, and positional arguments are refused.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usagef("unexpected argument %q", fs.Arg(0))
	}
	return nil
}
