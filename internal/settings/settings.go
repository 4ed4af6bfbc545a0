// Package settings makes one Go struct the single table of a program's
// settings: its fields' tags give every setting its YAML key, its flag, its
// environment variable, its default and its help text, and
// github.com/alecthomas/kong binds the flags and variables from them. This
// package adds what kong leaves to the program: the YAML file (a
// [kong.Resolver]), structured settings that are YAML values (a mapper named
// "yaml"), the list of settings ([Walk]) from which help and the README
// reference are made, and a check of the environment for misspelt variables.
//
// The table's rules, checked by [Walk]:
//   - A section is a struct field tagged `embed:"" prefix:"name-" yaml:"name"`;
//     its settings' YAML keys nest under name and their flags start with the
//     prefix.
//   - A struct field tagged `embed:"" yaml:",inline"` adds its settings to
//     the enclosing section.
//   - A setting is any other exported field. Its YAML key is its yaml tag,
//     its flag is the section prefixes followed by `name`, and name is the
//     YAML key with "_" as "-" (so the two cannot drift apart).
//   - Its environment variable is PREFIX_ and the flag in upper case with
//     "-" as "_" (kong.DefaultEnvars); an `env` tag may add older names after
//     that one.
//   - A setting whose value is a structure (a map, a list of objects) is
//     tagged `type:"yaml"`: in the file it is ordinary YAML, on the command
//     line and in the environment it is YAML or JSON text.
//
// Precedence is flags, then environment, then the file, then defaults.
package settings

import (
	"fmt"
	"reflect"
	"strings"
)

// Setting is one row of the table.
type Setting struct {
	// Key is the YAML key, dotted through its sections: "log.level".
	Key string
	// Flag is the long flag without dashes: "log-level".
	Flag string
	// Aliases are other accepted flag names.
	Aliases []string
	// Env lists the environment variables, the canonical one first.
	Env []string
	// Help is the one-paragraph description; Default the default as text
	// ("" when there is none); Enum the allowed values, when restricted.
	Help, Default, Enum string
	// Type names the value kind: string, bool, int, duration, list or yaml.
	Type string
	// Section is the Key's section path ("" at the top level).
	Section string
}

// Walk lists the settings of the struct type t (a struct or a pointer to
// one) in declaration order, with envPrefix (e.g. "MCPGATE") naming the
// variables. It reports a table that breaks the package's rules.
func Walk(t reflect.Type, envPrefix string) ([]Setting, error) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("settings: %s is not a struct", t)
	}
	var out []Setting
	err := walk(t, "", "", envPrefix, &out)
	return out, err
}

func walk(t reflect.Type, section, prefix, envPrefix string, out *[]Setting) error {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous || f.Tag.Get("kong") == "-" {
			continue
		}
		if strings.Contains(f.Tag.Get("yaml"), ",inline") {
			// Inline: the struct's settings belong to this section.
			if err := walk(f.Type, section, prefix, envPrefix, out); err != nil {
				return err
			}
			continue
		}
		key := yamlKey(f)
		if key == "" {
			continue
		}
		if _, ok := f.Tag.Lookup("embed"); ok {
			p, ok := f.Tag.Lookup("prefix")
			if !ok {
				p = strings.ReplaceAll(key, "_", "-") + "-"
			}
			if want := strings.ReplaceAll(key, "_", "-") + "-"; p != want && p != "" {
				return fmt.Errorf("settings: section %s: prefix %q, want %q", join(section, key), p, want)
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if err := walk(ft, join(section, key), prefix+p, envPrefix, out); err != nil {
				return err
			}
			continue
		}
		s, err := setting(f, section, prefix, envPrefix, key)
		if err != nil {
			return err
		}
		*out = append(*out, s)
	}
	return nil
}

func setting(f reflect.StructField, section, prefix, envPrefix, key string) (Setting, error) {
	want := strings.ReplaceAll(key, "_", "-")
	if name := f.Tag.Get("name"); name != want {
		return Setting{}, fmt.Errorf("settings: %s: name tag %q, want %q (the YAML key with dashes)", join(section, key), name, want)
	}
	if f.Tag.Get("help") == "" {
		return Setting{}, fmt.Errorf("settings: %s has no help", join(section, key))
	}
	flag := prefix + want
	env := envPrefix + "_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
	envs := []string{env}
	if tag, ok := f.Tag.Lookup("env"); ok {
		listed := strings.Split(tag, ",")
		if listed[0] != env {
			return Setting{}, fmt.Errorf("settings: %s: env tag must start with %s", join(section, key), env)
		}
		envs = listed
	}
	var aliases []string
	if a := f.Tag.Get("aliases"); a != "" {
		aliases = strings.Split(a, ",")
	}
	return Setting{
		Key: join(section, key), Flag: flag, Aliases: aliases, Env: envs,
		Help: f.Tag.Get("help"), Default: f.Tag.Get("default"), Enum: f.Tag.Get("enum"),
		Type: kind(f), Section: section,
	}, nil
}

func yamlKey(f reflect.StructField) string {
	tag := f.Tag.Get("yaml")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" {
		return ""
	}
	return name
}

func kind(f reflect.StructField) string {
	if f.Tag.Get("type") == "yaml" {
		return "yaml"
	}
	switch f.Type.String() {
	case "time.Duration":
		return "duration"
	}
	switch f.Type.Kind() {
	case reflect.Bool:
		return "bool"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "int"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Slice:
		return "list"
	}
	return "string"
}

func join(section, key string) string {
	if section == "" {
		return key
	}
	return section + "." + key
}

// Index maps the flag names of settings (aliases included) to them.
func Index(list []Setting) map[string]*Setting {
	m := make(map[string]*Setting, len(list))
	for i := range list {
		m[list[i].Flag] = &list[i]
		for _, a := range list[i].Aliases {
			m[a] = &list[i]
		}
	}
	return m
}
