package mcp

// The schema-root checks with and without their fast paths, for the
// external tests that compare them on the corpus (schemaroot_test.go).
var (
	HeaderParamsForTest              = func(s []byte) (any, error) { return headerParams(s) }
	HeaderParamsDecodedForTest       = func(s []byte) (any, error) { return headerParamsDecoded(s) }
	ObjectRootedSchemaForTest        = objectRootedSchema
	ObjectRootedSchemaDecodedForTest = objectRootedSchemaDecoded
)

// EncodeToolWireForTest is a tool's wire form and its 2025-11-25 form.
func EncodeToolWireForTest(t *Tool) (wire, legacy []byte, err error) {
	w, err := encodeToolWire(t, newSchemaPool())
	if err != nil {
		return nil, nil, err
	}
	return w.appendTo(nil, modern), w.appendTo(nil, legacyEra), nil
}
