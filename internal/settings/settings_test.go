package settings

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

type logSection struct {
	Level string `yaml:"level" name:"level" default:"info" enum:"info,debug" help:"Level."`
}

type inner struct {
	Limit int `yaml:"limit" name:"limit" help:"Limit."`
}

type table struct {
	Spec    string            `yaml:"spec" name:"spec" help:"Spec."`
	Lease   time.Duration     `yaml:"task_lease" name:"task-lease" default:"30s" help:"Lease."`
	Hosts   []string          `yaml:"allowed_hosts" name:"allowed-hosts" default:"a,b" help:"Hosts."`
	Legacy  bool              `yaml:"disable_legacy" name:"disable-legacy" aliases:"no-legacy" env:"X_DISABLE_LEGACY,X_NO_LEGACY" help:"Legacy."`
	Static  map[string]string `yaml:"static" name:"static" type:"yaml" help:"Static."`
	Log     logSection        `yaml:"log" embed:"" prefix:"log-"`
	inner   `yaml:",inline" embed:""`
	Ignored string `kong:"-"`
}

func TestWalk(t *testing.T) {
	list, err := Walk(reflect.TypeFor[table](), "X")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range list {
		got = append(got, s.Key+"|"+s.Flag+"|"+strings.Join(s.Env, ",")+"|"+s.Type)
	}
	want := []string{
		"spec|spec|X_SPEC|string",
		"task_lease|task-lease|X_TASK_LEASE|duration",
		"allowed_hosts|allowed-hosts|X_ALLOWED_HOSTS|list",
		"disable_legacy|disable-legacy|X_DISABLE_LEGACY,X_NO_LEGACY|bool",
		"static|static|X_STATIC|yaml",
		"log.level|log-level|X_LOG_LEVEL|string",
		"limit|limit|X_LIMIT|int",
	}
	if !slices.Equal(got, want) {
		t.Errorf("Walk:\n got %q\nwant %q", got, want)
	}
}

// TestWalkRules: a table that breaks a rule is refused with the setting
// named.
func TestWalkRules(t *testing.T) {
	cases := []struct {
		typ  reflect.Type
		want string
	}{
		{reflect.TypeFor[struct {
			A string `yaml:"max_len" name:"maxlen" help:"x"`
		}](), `max_len: name tag "maxlen", want "max-len"`},
		{reflect.TypeFor[struct {
			A string `yaml:"a" name:"a"`
		}](), "a has no help"},
		{reflect.TypeFor[struct {
			A string `yaml:"a" name:"a" help:"x" env:"OLD_A"`
		}](), "env tag must start with X_A"},
		{reflect.TypeFor[struct {
			S logSection `yaml:"log" embed:"" prefix:"logging-"`
		}](), `prefix "logging-", want "log-"`},
	}
	for _, c := range cases {
		if _, err := Walk(c.typ, "X"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.typ, err, c.want)
		}
	}
}

func TestApplyDefaults(t *testing.T) {
	v := table{Spec: "s", Log: logSection{Level: "debug"}}
	if err := ApplyDefaults(&v); err != nil {
		t.Fatal(err)
	}
	if v.Lease != 30*time.Second || !slices.Equal(v.Hosts, []string{"a", "b"}) || v.Log.Level != "debug" || v.Spec != "s" {
		t.Errorf("defaults: %+v", v)
	}
	if err := ApplyDefaults(v); err == nil {
		t.Error("a non-pointer was accepted")
	}
}

func TestClosest(t *testing.T) {
	list, _ := Walk(reflect.TypeFor[table](), "X")
	for in, want := range map[string]string{
		"log_level":     "log.level",
		"loglevel":      "log.level",
		"task_leese":    "task_lease",
		"allowed-hosts": "allowed_hosts",
		"frobnicate":    "",
	} {
		if got := closest(in, list); got != want {
			t.Errorf("closest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseFile(t *testing.T) {
	list, _ := Walk(reflect.TypeFor[table](), "X")
	if _, err := ParseFile("c.yaml", []byte("spec: x\nlog_level: debug\n"), &table{}, list); err == nil ||
		err.Error() != `config c.yaml: line 2: unknown setting "log_level" (did you mean "log.level"?)` {
		t.Errorf("misspelt key: %v", err)
	}
	f, err := ParseFile("c.yaml", []byte("spec: x\nlog: {level: debug}\nstatic: {a: b}\n"), &table{}, list)
	if err != nil {
		t.Fatal(err)
	}
	f.lookup = func(name string) (string, bool) { return "", name == "X_SPEC" }
	if v, ok := lookupKey(f.values, "log.level"); !ok || v != "debug" {
		t.Errorf("log.level = %v", v)
	}
	if _, err := ParseFile("c.yaml", []byte(""), &table{}, list); err != nil {
		t.Errorf("an empty file: %v", err)
	}
}

func TestUnknownEnv(t *testing.T) {
	list, _ := Walk(reflect.TypeFor[table](), "X")
	env := []string{"X_SPEC=a", "X_NO_LEGACY=1", "X_SPECC=b", "X_SECRET_KEY=c", "OTHER=d", "X_BEARER_TOKEN=e"}
	got := UnknownEnv(list, env, "X", "X_SECRET_", "X_BEARER_TOKEN")
	if !slices.Equal(got, []string{"X_SPECC"}) {
		t.Errorf("UnknownEnv = %v", got)
	}
}

func TestReference(t *testing.T) {
	list, _ := Walk(reflect.TypeFor[table](), "X")
	ref := Reference(list)
	for _, want := range []string{
		"| `log.level` | `--log-level` | `X_LOG_LEVEL` | `info` | Level. One of: info, debug. |",
		"`--disable-legacy`, `--no-legacy` | `X_DISABLE_LEGACY`, `X_NO_LEGACY`",
		"Static. (A structure",
	} {
		if !strings.Contains(ref, want) {
			t.Errorf("reference lacks %q:\n%s", want, ref)
		}
	}
}
