package jsonx

import (
	"strings"
	"testing"
)

func TestReaderMembers(t *testing.T) {
	var r Reader
	in := []byte(` {"a" : 1, "b":{"c":[true]}, "a":"x\u00e9", "\u0064":null} `)
	r.Reset(in)
	if !r.OpenObject() {
		t.Fatal("OpenObject")
	}
	var got []string
	for {
		name, v, ok, err := r.Member()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		got = append(got, Unquote(name)+"="+string(v))
	}
	if want := `a=1|b={"c":[true]}|a="x\u00e9"|d=null`; strings.Join(got, "|") != want {
		t.Errorf("members %s, want %s", strings.Join(got, "|"), want)
	}
	if !r.AtEOF() {
		t.Error("AtEOF after the document")
	}
	r.Reset([]byte(`{} x`))
	if !r.OpenObject() {
		t.Fatal("OpenObject")
	}
	if _, ok, err := r.Name(); ok || err != nil {
		t.Fatalf("empty object: ok %v err %v", ok, err)
	}
	if r.AtEOF() {
		t.Error("AtEOF with trailing data")
	}
	r.Reset([]byte(`{"a":}`))
	r.OpenObject()
	if _, _, _, err := r.Member(); err == nil {
		t.Error("a syntax error was not reported")
	}
	r.Release()
}

func TestNameIsAndUnquote(t *testing.T) {
	for _, c := range []struct {
		quoted, want string
		is           bool
	}{
		{`"id"`, "id", true},
		{`"\u0069d"`, "id", true},
		{`"ID"`, "id", false},
		{`"idx"`, "id", false},
		{`""`, "", true},
	} {
		if got := NameIs([]byte(c.quoted), c.want); got != c.is {
			t.Errorf("NameIs(%s, %q) = %v", c.quoted, c.want, got)
		}
	}
	if got := Unquote([]byte(`"a\"b\u00e9"`)); got != "a\"bé" {
		t.Errorf("Unquote = %q", got)
	}
	if got := Unquote([]byte(`"plain"`)); got != "plain" {
		t.Errorf("Unquote = %q", got)
	}
}
