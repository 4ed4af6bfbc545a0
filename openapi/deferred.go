package openapi

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// This file builds a document's path items while Generate makes the tools
// of those before them ([LoadOptions].DeferPaths): loading a large
// document is mostly building its path items, and generation mostly
// converting their schemas, so on two cores the two overlap.
//
// Who touches what: the builder goroutine owns the builder (its memo, its
// decoder, its warnings) and makes each path item; the generator reads a
// path item only after receiving it, with everything the builder made for
// it, so every value it reads was finished before it was sent. The
// component schemas were built by Load, before either started, and are
// only read. The one shared table, the descriptions written beside $refs,
// travels with each path item and is merged into the document's by the
// generator.

// deferredPaths are the path items Load left for Generate to build: the
// path's raw item (rawPathItem) or its decoded tree, by path.
type deferredPaths struct {
	b     *builder
	items map[string]any
}

// builtItem is one path item, as the builder goroutine hands it over.
type builtItem struct {
	path     string
	item     *openapi3.PathItem
	refDescs map[*openapi3.SchemaRef]string // written beside its $refs
}

// aheadItems bounds how far the builder runs ahead of generation: what is
// built and not yet turned into tools is held beside them.
const aheadItems = 64

// deferrable reports whether every path item of paths can be built apart
// from the document: each is raw (the document holds no reference into
// its paths) and none may hold a reference that kin's loader would have
// to resolve in the whole document (to another file, or a path item's own
// $ref).
func deferrable(paths map[string]any) bool {
	for p, v := range paths {
		if strings.HasPrefix(p, "x-") {
			continue
		}
		raw, ok := v.(rawPathItem)
		if !ok || mayReferElsewhere(raw) {
			return false
		}
	}
	return true
}

// localRefKinds are the component kinds a path item's references may name
// for it to be built apart: each the builder resolves itself.
var localRefKinds = []string{"schemas/", "parameters/", "responses/", "requestBodies/", "headers/", "examples/"}

// mayReferElsewhere reports whether raw may hold a reference other than
// to the components the builder resolves (localRefKinds). It is
// conservative: an escaped '$', 'r', 'e' or 'f' (which could spell the
// key "$ref"), or a $ref whose value is not a plain string naming one of
// those components, counts as one.
func mayReferElsewhere(raw []byte) bool {
	for _, esc := range []string{`\u0024`, `\u0072`, `\u0065`, `\u0066`} {
		if bytes.Contains(raw, []byte(esc)) {
			return true
		}
	}
	const key = `"$ref"`
	for rest := raw; ; {
		i := bytes.Index(rest, []byte(key))
		if i < 0 {
			return false
		}
		rest = bytes.TrimLeft(rest[i+len(key):], " \t\r\n")
		if len(rest) == 0 || rest[0] != ':' {
			return true
		}
		rest = bytes.TrimLeft(rest[1:], " \t\r\n")
		const prefix = `"#/components/`
		if !bytes.HasPrefix(rest, []byte(prefix)) {
			return true
		}
		kind := rest[len(prefix):]
		known := false
		for _, k := range localRefKinds {
			if bytes.HasPrefix(kind, []byte(k)) {
				known = true
				break
			}
		}
		if !known {
			return true
		}
	}
}

// build builds the path items in order of their paths and sends each on
// out, until they are all sent or stop is closed. It returns the builder's
// first error, or a panic's, naming the document.
func (d *deferredPaths) build(ctx context.Context, source string, out chan<- builtItem, stop <-chan struct{}) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &LoadError{Source: source, Err: fmt.Errorf("internal error while loading (please report it with the document): %v", r)}
		}
	}()
	b := d.b
	for _, p := range sortedKeys(d.items) {
		if strings.HasPrefix(p, "x-") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		v := d.items[p]
		delete(d.items, p) // held from here on by the item built from it
		if raw, ok := v.(rawPathItem); ok {
			if v, err = b.dec.pathItem(raw); err != nil {
				return &LoadError{Source: source, Place: "paths." + p, Err: err}
			}
		}
		m := obj(v)
		if m == nil {
			continue
		}
		b.transient, b.refDescriptions = true, nil
		item := b.pathItem("paths."+p, m)
		b.transient = false
		if b.err != nil {
			var pe *placeError
			if errors.As(b.err, &pe) {
				return &LoadError{Source: source, Place: pe.place, Err: b.err}
			}
			return &LoadError{Source: source, Err: b.err}
		}
		if b.external { // deferrable let through what only kin's loader resolves
			return &LoadError{Source: source, Place: "paths." + p, Err: errors.New("internal error: a reference the path items' builder cannot resolve (please report it with the document)")}
		}
		select {
		case out <- builtItem{path: p, item: item, refDescs: b.refDescriptions}:
		case <-stop:
			return nil
		}
	}
	return nil
}

// pathItems yields the document's path items in order of their paths. A
// deferred document's are built meanwhile on another goroutine, once: a
// second walk finds none and reports it through *errp, where the
// builder's error goes too. The walk stops that goroutine however it ends.
func (g *generator) pathItems(ctx context.Context, errp *error) iter.Seq2[string, *openapi3.PathItem] {
	d := g.doc.deferred
	if d == nil {
		return func(yield func(string, *openapi3.PathItem) bool) {
			paths := g.doc.T.Paths.Map()
			for _, p := range sortedKeys(paths) {
				if item := paths[p]; item != nil && !yield(p, item) {
					return
				}
			}
		}
	}
	return func(yield func(string, *openapi3.PathItem) bool) {
		if d.items == nil {
			*errp = errors.New("openapi: Generate: the document's path items were deferred (LoadOptions.DeferPaths) and have been generated once already")
			return
		}
		items := d.items
		out, stop, done := make(chan builtItem, aheadItems), make(chan struct{}), make(chan error, 1)
		go func() {
			err := d.build(ctx, g.doc.Source, out, stop)
			close(out)
			done <- err
		}()
		defer func() {
			close(stop)
			for range out { // let the builder see stop
			}
			if err := <-done; err != nil && *errp == nil {
				*errp = err
			}
			d.items = nil
			g.doc.Warnings = append(g.doc.Warnings, d.b.warnings...)
			d.b.warnings = nil
			clear(items)
		}()
		for it := range out {
			g.addRefDescriptions(it.refDescs)
			if !yield(it.path, it.item) {
				return
			}
		}
	}
}

// addRefDescriptions adds the descriptions written beside one path item's
// $refs to the document's, which the schema converters read.
func (g *generator) addRefDescriptions(m map[*openapi3.SchemaRef]string) {
	if len(m) == 0 {
		return
	}
	if g.doc.refDescriptions == nil {
		g.doc.refDescriptions = make(map[*openapi3.SchemaRef]string, len(m))
		g.in.refDescriptions, g.out.refDescriptions = g.doc.refDescriptions, g.doc.refDescriptions
	}
	for r, desc := range m {
		g.doc.refDescriptions[r] = desc
	}
}
