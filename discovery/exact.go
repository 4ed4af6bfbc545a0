package discovery

import (
	"slices"
	"strings"
	"sync"
)

// An agent often knows the operation it wants by its name, its
// operationId or its path, from documentation or an earlier answer
// ("repos/create-fork", "GET /repos/{owner}/{repo}/pulls"). Such a query
// names its tools exactly: they come first, whatever the ranking says of
// its words.

// exactTable finds tools by operationId and by path. It is built on the
// first query that could name a tool so, from the index's immutable
// documents, so that an index that is never asked pays nothing for it.
type exactTable struct {
	once   sync.Once
	byOpID map[string][]int32
	byPath map[string][]int32 // by pathKey
}

// exact are the tools text names exactly, in index order: a tool's name or
// operationId alone, or a path alone or after its method ("/pets/{id}",
// "GET /pets/{petId}"; parameters' names need not match). A tool that q
// keeps out is not among them.
func (ix *Index) exact(text string, q Query) []int32 {
	fields := strings.Fields(text)
	var method, path string
	switch {
	case len(fields) == 1 && strings.HasPrefix(fields[0], "/"):
		path = fields[0]
	case len(fields) == 2 && httpMethods[strings.ToUpper(fields[0])] && strings.HasPrefix(fields[1], "/"):
		method, path = strings.ToUpper(fields[0]), fields[1]
	case len(fields) != 1:
		return nil
	}
	t := &ix.exactTable
	t.once.Do(func() { ix.buildExact(t) })
	var docs []int32
	if path != "" {
		for _, d := range t.byPath[pathKey(path)] {
			if method == "" || ix.docs[d].Method == method {
				docs = append(docs, d)
			}
		}
	} else {
		if d, ok := ix.byName[fields[0]]; ok {
			docs = append(docs, d)
		}
		for _, d := range t.byOpID[fields[0]] {
			if !slices.Contains(docs, d) {
				docs = append(docs, d)
			}
		}
		slices.Sort(docs)
	}
	return slices.DeleteFunc(docs, func(d int32) bool {
		doc := &ix.docs[d]
		return q.API != "" && doc.API != q.API || q.Visible != nil && !q.Visible(doc.Name)
	})
}

func (ix *Index) buildExact(t *exactTable) {
	t.byOpID = make(map[string][]int32)
	t.byPath = make(map[string][]int32)
	for i := range ix.docs {
		d := &ix.docs[i]
		if d.OperationID != "" {
			t.byOpID[d.OperationID] = append(t.byOpID[d.OperationID], int32(i))
		}
		if k := pathKey(d.Path); k != "" {
			t.byPath[k] = append(t.byPath[k], int32(i))
		}
	}
}

// pathKey is a path with its parameters' names left out and no trailing
// slash: "/pets/{petId}" and "/pets/{id}/" are one key, "/pets/{}".
func pathKey(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		c := path[i]
		if c == '{' {
			if end := strings.IndexByte(path[i:], '}'); end > 0 {
				b.WriteString("{}")
				i += end
				continue
			}
		}
		b.WriteByte(c)
	}
	return strings.TrimRight(b.String(), "/")
}

// httpMethods are the methods a query may put before a path.
var httpMethods = map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
	"DELETE": true, "OPTIONS": true, "TRACE": true, "QUERY": true}

// withExact puts the exact tools first, above every other hit, and keeps
// the rest of hits in order without them.
func withExact(hits []hit, exact []int32) []hit {
	top := float32(1)
	if len(hits) > 0 {
		top = hits[0].score + 1
	}
	out := make([]hit, 0, len(exact)+len(hits))
	for _, d := range exact {
		out = append(out, hit{doc: d, score: top})
	}
	for _, h := range hits {
		if !slices.Contains(exact, h.doc) {
			out = append(out, h)
		}
	}
	return out
}
