package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ParseOverrides reads an overrides file (JSON or YAML): an object keyed by
// operationId or "METHOD /path", each value an [Override], e.g.
//
//	createPet: {name: add_pet, destructiveHint: false}
//	"DELETE /pets/{id}": {hide: true}
//	getUser: {redactResponse: [password_hash, sessions.token]}
func ParseOverrides(data []byte) (map[string]Override, error) {
	data = bytes.TrimPrefix(data, []byte(utf8BOM))
	if t := bytes.TrimLeft(data, " \t\r\n"); len(t) > 0 && t[0] != '{' {
		j, err := yamlToJSON(data)
		if err != nil {
			return nil, fmt.Errorf("openapi: overrides: %w", err)
		}
		data = j
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var out map[string]Override
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("openapi: overrides: %w", err)
	}
	return out, nil
}
