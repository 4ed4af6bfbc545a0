package mcp

// The schema-root checks with and without their fast paths, for the
// external tests that compare them on the corpus (schemaroot_test.go).
var (
	HeaderParamsForTest              = func(s []byte) (any, error) { return headerParams(s) }
	HeaderParamsDecodedForTest       = func(s []byte) (any, error) { return headerParamsDecoded(s) }
	ObjectRootedSchemaForTest        = objectRootedSchema
	ObjectRootedSchemaDecodedForTest = objectRootedSchemaDecoded
)
