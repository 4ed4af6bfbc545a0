package jsonx

import (
	"errors"
	"strings"
	"testing"
)

func TestReaderMembers(t *testing.T) {
	var r Reader
	in := []byte(` {"a" : 1, "b":{"c":[true]}, "e":"x\u00e9", "\u0064":null} `)
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
	if want := `a=1|b={"c":[true]}|e="x\u00e9"|d=null`; strings.Join(got, "|") != want {
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

// TestReaderRefusesDuplicateNames checks that a duplicate member name is an
// error wherever it is (top level, nested in a value read whole, spelled
// with escapes) and that DuplicateName points at the second occurrence.
func TestReaderRefusesDuplicateNames(t *testing.T) {
	for _, c := range []struct {
		in, pointer string
	}{
		{`{"method":"a","method":"b"}`, "/method"},
		{`{"id":1,"params":{"arguments":{"x":1,"x":2}}}`, "/params/arguments/x"},
		{`{"result":{"action":"decline","\u0061ction":"accept"}}`, "/result/action"},
		{`{"a":[{"k":1},{"k":2,"k":3}]}`, "/a/1/k"},
		{`{"_meta":{"p":1,"q":{},"p":2}}`, "/_meta/p"},
	} {
		var r Reader
		r.Reset([]byte(c.in))
		err := readAll(&r)
		if !errors.Is(err, ErrDuplicateName) {
			t.Errorf("%s: err = %v, want a duplicate name error", c.in, err)
			continue
		}
		if p, ok := DuplicateName(err); !ok || p != c.pointer {
			t.Errorf("%s: DuplicateName = %q, %v; want %q", c.in, p, ok, c.pointer)
		}
	}
	// The same name in sibling objects is not a duplicate.
	var r Reader
	r.Reset([]byte(`{"a":{"x":1},"b":{"x":2},"c":[{"x":3},{"x":4}]}`))
	if err := readAll(&r); err != nil {
		t.Errorf("sibling objects: %v", err)
	}
	if _, ok := DuplicateName(errors.New("other")); ok {
		t.Error("DuplicateName of an unrelated error")
	}
}

// readAll reads the top-level object member by member.
func readAll(r *Reader) error {
	if !r.OpenObject() {
		return errors.New("not an object")
	}
	for {
		_, _, ok, err := r.Member()
		if err != nil || !ok {
			return err
		}
	}
}
