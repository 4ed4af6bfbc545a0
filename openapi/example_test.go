package openapi_test

import (
	"context"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"

	"github.com/mcpgate/mcpgate/openapi"
)

const petsDoc = `{"openapi": "3.0.3", "info": {"title": "pets", "version": "1"},
 "paths": {
  "/pets": {"get": {"operationId": "listPets", "summary": "List the pets", "responses": {"200": {"description": "ok"}}},
            "post": {"operationId": "addPet", "summary": "Add a pet", "responses": {"201": {"description": "made"}}}},
  "/pets/{id}": {"delete": {"operationId": "deletePet", "summary": "Delete a pet",
   "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "integer"}}],
   "responses": {"204": {"description": "gone"}}}}}}`

// A document's tools: one per operation, with the route a proxy calls.
func ExampleGenerate() {
	doc, err := openapi.Parse(context.Background(), []byte(petsDoc), "pets.json", openapi.LoadOptions{})
	if err != nil {
		panic(err)
	}
	res, err := openapi.Generate(doc, openapi.GenerateOptions{})
	if err != nil {
		panic(err)
	}
	for _, t := range res.Tools {
		fmt.Printf("%s: %s %s, destructive %v\n", t.Name, t.Route.Method, t.Route.Path, t.Annotations.DestructiveHint)
	}
	// Output:
	// listPets: GET /pets, destructive false
	// addPet: POST /pets, destructive false
	// deletePet: DELETE /pets/{id}, destructive true
}

// With DeferPaths the path items are built while the tools are made, on
// another goroutine; OnPathItem reads each as it passes, in path order.
func ExampleLoadOptions_deferPaths() {
	doc, err := openapi.Parse(context.Background(), []byte(petsDoc), "pets.json", openapi.LoadOptions{DeferPaths: true})
	if err != nil {
		panic(err)
	}
	fmt.Println("built at load:", doc.T.Paths.Len())
	res, err := openapi.Generate(doc, openapi.GenerateOptions{Consume: true,
		OnPathItem: func(path string, item *openapi3.PathItem) {
			fmt.Println(path, len(item.Operations()), "operations")
		}})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(res.Tools), "tools")
	_, err = openapi.Generate(doc, openapi.GenerateOptions{})
	fmt.Println("again:", err != nil)
	// Output:
	// built at load: 0
	// /pets 2 operations
	// /pets/{id} 1 operations
	// 3 tools
	// again: true
}
