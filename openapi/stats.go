package openapi

import (
	"cmp"
	"slices"
)

// ToolSize is the size of one tool's tools/list entry.
type ToolSize struct {
	Name   string `json:"name"`
	Bytes  int    `json:"bytes"`
	Tokens int    `json:"tokens"`
	// InputSchemaBytes and OutputSchemaBytes are the schemas' share.
	InputSchemaBytes  int `json:"inputSchemaBytes"`
	OutputSchemaBytes int `json:"outputSchemaBytes"`
}

// ToolStats are the sizes of a tools/list result, what an agent pays to
// load it: counts, bytes and estimated tokens, per tool and in total.
type ToolStats struct {
	Tools int `json:"tools"`
	// Bytes and Tokens are the whole encoded tools/list result's.
	Bytes  int `json:"bytes"`
	Tokens int `json:"tokens"`
	// Per-tool entry sizes in bytes: median, 95th percentile, largest.
	P50Bytes int `json:"p50Bytes"`
	P95Bytes int `json:"p95Bytes"`
	MaxBytes int `json:"maxBytes"`
	// WithOutputSchema counts the tools that carry an outputSchema.
	WithOutputSchema int `json:"withOutputSchema"`
	// Largest are the largest tools, largest first.
	Largest []ToolSize `json:"largest"`
}

// EstimateTokens estimates the tokens of JSON text: bytes/4, rounded up,
// the usual rule of thumb for English and JSON with common tokenizers.
func EstimateTokens(bytes int) int { return (bytes + 3) / 4 }

// Stats measures the tools/list result [EncodeToolsList] makes of tools,
// naming the largest tools (at most largest of them).
func Stats(tools []Tool, largest int) (*ToolStats, error) {
	st := &ToolStats{Tools: len(tools)}
	sizes := make([]ToolSize, 0, len(tools))
	total := len(`{"tools":[]}` + "\n")
	var buf []byte
	for i := range tools {
		t := &tools[i]
		var err error
		if buf, err = appendTool(buf[:0], t); err != nil {
			return nil, err
		}
		sizes = append(sizes, ToolSize{Name: t.Name, Bytes: len(buf), Tokens: EstimateTokens(len(buf)),
			InputSchemaBytes: len(t.InputSchema), OutputSchemaBytes: len(t.OutputSchema)})
		total += len(buf)
		if i > 0 {
			total++ // the comma
		}
		if len(t.OutputSchema) > 0 {
			st.WithOutputSchema++
		}
	}
	st.Bytes, st.Tokens = total, EstimateTokens(total)
	slices.SortStableFunc(sizes, func(a, b ToolSize) int { return cmp.Or(b.Bytes-a.Bytes, cmp.Compare(a.Name, b.Name)) })
	if n := len(sizes); n > 0 {
		st.MaxBytes = sizes[0].Bytes
		st.P50Bytes = sizes[n/2].Bytes         // sorted largest first
		st.P95Bytes = sizes[(n-1)*5/100].Bytes // the 95th percentile from the top
	}
	st.Largest = sizes[:min(largest, len(sizes))]
	return st, nil
}
