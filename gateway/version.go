package gateway

import (
	"runtime/debug"
	"strings"
)

// modulePath is this module's path, as go install names it.
const modulePath = "github.com/mcpgate/mcpgate"

// Version is mcpgate's version as the build recorded it: the module
// version for a build of a released module (go install
// github.com/mcpgate/mcpgate/cmd/mcpgate@v1.2.3, or a program that depends
// on it), else "devel" with the VCS revision when the build knows it
// ("devel+1a2b3c4d5e6f", "+dirty" for uncommitted changes). It is what
// "mcpgate version" prints and what serverInfo.version says.
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := info.Main.Version
	if info.Main.Path != modulePath {
		v = ""
		for _, d := range info.Deps {
			if d.Path == modulePath {
				v = d.Version
			}
		}
	}
	if v != "" && v != "(devel)" {
		return v
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value[:min(12, len(s.Value))]
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "+dirty"
			}
		}
	}
	if rev == "" {
		return "devel"
	}
	return strings.Join([]string{"devel", rev}, "+") + dirty
}
