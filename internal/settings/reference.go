package settings

import (
	"fmt"
	"strings"
)

// Reference renders the settings as a Markdown table (key, flag, variable,
// default, meaning), the form docs/settings.md takes.
func Reference(list []Setting) string {
	var b strings.Builder
	b.WriteString("| YAML key | flag | environment | default | meaning |\n")
	b.WriteString("| --- | --- | --- | --- | --- |\n")
	for _, s := range list {
		flag := "`--" + s.Flag + "`"
		for _, a := range s.Aliases {
			flag += ", `--" + a + "`"
		}
		env := "`" + strings.Join(s.Env, "`, `") + "`"
		def := ""
		if s.Default != "" {
			def = "`" + s.Default + "`"
		}
		help := s.Help
		if s.Enum != "" && !strings.Contains(help, "|") {
			help += " One of: " + strings.ReplaceAll(s.Enum, ",", ", ") + "."
		}
		if s.Type == "yaml" {
			help += " (A structure: YAML in the file; YAML or JSON text in the flag or variable.)"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", s.Key, flag, env, def, strings.ReplaceAll(help, "|", `\|`))
	}
	return b.String()
}
