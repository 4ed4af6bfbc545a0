package main

import (
	"fmt"
	"runtime"

	"github.com/mcpgate/mcpgate/gateway"
)

type versionCmd struct{}

// Run prints the version: the same one serve reports as serverInfo.version.
func (versionCmd) Run(io streams) error {
	_, err := fmt.Fprintln(io.stdout, "mcpgate", gateway.Version(), runtime.Version())
	return err
}
