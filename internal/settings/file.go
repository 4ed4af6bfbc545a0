package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"github.com/alecthomas/kong"
	"go.yaml.in/yaml/v4"
)

// File is a YAML settings file, decoded and checked once. As a
// [kong.Resolver] it gives each flag the file's value, unless one of the
// flag's environment variables is set (the environment wins over the file).
type File struct {
	path   string
	values map[string]any
	byFlag map[string]*Setting
	lookup func(string) (string, bool)
}

// LoadFile reads the YAML file at path. It decodes it strictly into a new
// value of into's type (a pointer to the settings struct), so that an
// unknown key anywhere, or a value of the wrong type, is an error naming the
// file, the line and, for a misspelt key, the setting it resembles.
func LoadFile(path string, into any, list []Setting) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, errors.Unwrap(err))
	}
	return ParseFile(path, data, into, list)
}

// ParseFile is [LoadFile] on data already read; path only names it.
func ParseFile(path string, data []byte, into any, list []Setting) (*File, error) {
	check := reflect.New(reflect.TypeOf(into).Elem()).Interface()
	if err := decodeStrict(data, check); err != nil {
		return nil, fmt.Errorf("config %s: %s", path, explain(err, list))
	}
	var values map[string]any
	if err := yaml.Unmarshal(data, &values); err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return &File{path: path, values: values, byFlag: Index(list), lookup: os.LookupEnv}, nil
}

// Path is the file's path.
func (f *File) Path() string { return f.path }

// Validate implements [kong.Resolver]; the file was checked when loaded.
func (f *File) Validate(*kong.Application) error { return nil }

// Resolve implements [kong.Resolver].
func (f *File) Resolve(_ *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
	s := f.byFlag[flag.Name]
	if s == nil {
		return nil, nil
	}
	for _, env := range s.Env {
		if _, ok := f.lookup(env); ok {
			return nil, nil
		}
	}
	v, ok := lookupKey(f.values, s.Key)
	if !ok || v == nil {
		return nil, nil
	}
	switch v := v.(type) {
	case map[string]any:
		return v, nil
	case []any:
		return v, nil
	case string:
		return v, nil
	default:
		return fmt.Sprint(v), nil
	}
}

func lookupKey(m map[string]any, key string) (any, bool) {
	var cur any = m
	for part := range strings.SplitSeq(key, ".") {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = mm[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// Mapper decodes a structured setting (tagged `type:"yaml"`): YAML or JSON
// text from a flag or a variable (or "@PATH": the file at PATH), or a value
// from the file. Unknown keys are
// an error. Register it with kong.NamedMapper("yaml", settings.Mapper{}).
type Mapper struct{}

// Decode implements [kong.Mapper].
func (Mapper) Decode(ctx *kong.DecodeContext, target reflect.Value) error {
	t := ctx.Scan.Pop()
	var text []byte
	source := "value"
	switch v := t.Value.(type) {
	case string:
		text = []byte(v)
		if path, ok := strings.CutPrefix(v, "@"); ok {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			text, source = b, path
		}
	default:
		b, err := yaml.Marshal(v)
		if err != nil {
			return err
		}
		text = b
	}
	fresh := reflect.New(target.Type())
	if err := decodeStrict(text, fresh.Interface()); err != nil {
		return fmt.Errorf("%s: %s", source, tidy(err))
	}
	target.Set(fresh.Elem())
	return nil
}

func decodeStrict(data []byte, into any) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(into); err != nil && !errors.Is(err, io.EOF) { // an empty file is no error
		return err
	}
	return nil
}

// tidy is a yaml error on one line, without the library's prefixes.
func tidy(err error) string {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	for _, p := range []string{"yaml: ", "unmarshal errors: ", "construct errors: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}

var unknownField = regexp.MustCompile(`line (\d+): field (\S+) not found in type (\S+)`)

// explain turns yaml's "field x not found in type T" into a sentence that
// names the setting a misspelt key most resembles.
func explain(err error, list []Setting) string {
	msg := tidy(err)
	m := unknownField.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	line, _ := strconv.Atoi(m[1])
	out := fmt.Sprintf("line %d: unknown setting %q", line, m[2])
	if s := closest(m[2], list); s != "" {
		out += fmt.Sprintf(" (did you mean %q?)", s)
	}
	return out
}

// closest is the setting key nearest to an unknown key: the same letters
// once separators are ignored ("log_level" for "log.level"), else the
// fewest edits (at most a third of the key's length).
func closest(key string, list []Setting) string {
	norm := func(s string) string {
		return strings.NewReplacer(".", "", "_", "", "-", "").Replace(strings.ToLower(s))
	}
	best, bestDist := "", len(key)/3+1
	for _, s := range list {
		leaf := s.Key[strings.LastIndex(s.Key, ".")+1:]
		if norm(s.Key) == norm(key) || norm(leaf) == norm(key) && s.Section == "" {
			return s.Key
		}
		for _, cand := range []string{s.Key, leaf} {
			if d := distance(norm(cand), norm(key)); d < bestDist {
				best, bestDist = s.Key, d
			}
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// UnknownEnv lists the variables in environ ("NAME=value") that start with
// prefix+"_" but name no setting and match none of allowed (exact names, or
// prefixes ending in "_"), sorted as environ is.
func UnknownEnv(list []Setting, environ []string, prefix string, allowed ...string) []string {
	known := map[string]bool{}
	for _, s := range list {
		for _, e := range s.Env {
			known[e] = true
		}
	}
	var out []string
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, prefix+"_") || known[name] {
			continue
		}
		ok := false
		for _, a := range allowed {
			if name == a || strings.HasSuffix(a, "_") && strings.HasPrefix(name, a) {
				ok = true
				break
			}
		}
		if !ok {
			out = append(out, name)
		}
	}
	return out
}
