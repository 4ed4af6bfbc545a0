package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// AddTool registers a tool whose arguments decode into In. Unless t has an
// InputSchema, it is derived from In (see SchemaFor). Arguments that do not
// decode into In get a tool error naming the problem, so the model can fix
// its call.
func AddTool[In any](s *Server, t *Tool, h func(ctx context.Context, req *CallToolRequest, in In) (*CallToolResult, error)) error {
	tool := *t
	if len(tool.InputSchema) == 0 {
		schema, err := SchemaFor[In]()
		if err != nil {
			return fmt.Errorf("mcp: tool %q: %w", t.Name, err)
		}
		tool.InputSchema = schema
	}
	return s.AddTool(&tool, func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error) {
		var in In
		if err := req.Bind(&in); err != nil {
			return ToolError("Invalid arguments: " + err.Error()), nil
		}
		return h(ctx, req, in)
	})
}

// SchemaFor derives a JSON Schema 2020-12 for T from its Go type: structs
// become objects whose properties follow the json tags (fields without
// omitempty/omitzero are required), with a description from the
// `jsonschema:"..."` tag; slices become arrays, maps objects, pointers are
// optional, time.Time is a date-time string. Recursive types are rejected.
func SchemaFor[T any]() (json.RawMessage, error) {
	t := reflect.TypeFor[T]()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct && t.Kind() != reflect.Map {
		return nil, fmt.Errorf("tool arguments must be a struct or a map, not %s", t)
	}
	s, err := schemaOf(t, map[reflect.Type]bool{})
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

var timeType = reflect.TypeFor[time.Time]()

func schemaOf(t reflect.Type, seen map[reflect.Type]bool) (map[string]any, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == timeType {
		return map[string]any{"type": "string", "format": "date-time"}, nil
	}
	if t == reflect.TypeFor[json.RawMessage]() {
		return map[string]any{}, nil
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]any{"type": "string"}, nil
	case reflect.Bool:
		return map[string]any{"type": "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}, nil
	case reflect.Interface:
		return map[string]any{}, nil
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}, nil
		}
		items, err := schemaOf(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "array", "items": items}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map key of %s must be a string", t)
		}
		vals, err := schemaOf(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "object", "additionalProperties": vals}, nil
	case reflect.Struct:
		if seen[t] {
			return nil, fmt.Errorf("recursive type %s: give the tool an explicit InputSchema", t)
		}
		seen[t] = true
		defer delete(seen, t)
		props := map[string]any{}
		required := []string{}
		if err := structFields(t, seen, props, &required); err != nil {
			return nil, err
		}
		s := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			s["required"] = required
		}
		return s, nil
	}
	return nil, fmt.Errorf("unsupported type %s", t)
}

func structFields(t reflect.Type, seen map[reflect.Type]bool, props map[string]any, required *[]string) error {
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			if err := structFields(f.Type, seen, props, required); err != nil {
				return err
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs, err := schemaOf(f.Type, seen)
		if err != nil {
			return fmt.Errorf("field %s: %w", f.Name, err)
		}
		if d := f.Tag.Get("jsonschema"); d != "" {
			fs["description"] = d
		}
		props[name] = fs
		if !strings.Contains(opts, "omitempty") && !strings.Contains(opts, "omitzero") && f.Type.Kind() != reflect.Pointer {
			*required = append(*required, name)
		}
	}
	return nil
}
