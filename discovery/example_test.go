package discovery_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcpgate/mcpgate/discovery"
	"github.com/mcpgate/mcpgate/mcp"
)

func exampleDocs() []discovery.Doc {
	return []discovery.Doc{
		{Name: "listInvoices", Title: "List invoices", Method: "GET", Path: "/invoices"},
		{Name: "voidInvoice", Title: "Void an invoice", Method: "POST", Path: "/invoices/{id}/void"},
		{Name: "deleteCustomer", Title: "Delete a customer", Method: "DELETE", Path: "/customers/{id}"},
		{Name: "createRefund", Title: "Create a refund", Description: "Refunds a charge that was paid.", Method: "POST", Path: "/refunds"},
	}
}

func ExampleIndex_Search() {
	ix, err := discovery.New(exampleDocs(), discovery.Options{})
	if err != nil {
		panic(err)
	}
	res, err := ix.Search(context.Background(), discovery.Query{Text: "get rid of a customer", Limit: 1})
	if err != nil {
		panic(err)
	}
	for _, r := range res {
		fmt.Println(r.Name, r.Method, r.Path)
	}
	// A tool the caller may not see never appears.
	res, _ = ix.Search(context.Background(), discovery.Query{Text: "get rid of a customer", Limit: 2,
		Visible: func(name string) bool { return name != "deleteCustomer" }})
	fmt.Println(len(res) > 0 && res[0].Name != "deleteCustomer")
	// Output:
	// deleteCustomer DELETE /customers/{id}
	// true
}

func ExampleCatalog() {
	docs := exampleDocs()
	ix, _ := discovery.New(docs, discovery.Options{})
	defs := make([]mcp.Tool, len(docs))
	for i, d := range docs {
		defs[i] = mcp.Tool{Name: d.Name, Title: d.Title, InputSchema: json.RawMessage(`{"type":"object"}`)}
	}
	cat, err := discovery.NewCatalog(ix, defs, "Billing API")
	if err != nil {
		panic(err)
	}
	for _, t := range cat.Tools() {
		fmt.Println(t.Name)
	}
	res := cat.Search(context.Background(), json.RawMessage(`{"query":"refund a charge","limit":1}`), nil)
	fmt.Println(res.Content[0].Text)
	name, args, _ := discovery.ParseCall(json.RawMessage(`{"name":"createRefund","arguments":{"charge":"ch_1"}}`))
	fmt.Println(name, string(args))
	// Output:
	// search
	// describe
	// call
	// 1 tool for "refund a charge", best first:
	//
	// 1. createRefund — POST /refunds
	//    Create a refund
	//    Refunds a charge that was paid.
	//
	// Call describe with the names you need for their input schemas.
	// createRefund {"charge":"ch_1"}
}

func ExampleDecide() {
	// 8 MiB of tools/list is about 2.1 million tokens: over the default
	// budget of 20,000, auto mode serves discovery.
	d := discovery.Decide(discovery.ModeAuto, 8<<20, 0)
	fmt.Println(d.Discovery)
	fmt.Println(d)
	// Output:
	// true
	// discovery mode: the full tool list is about 2097152 tokens, over the budget of 20000
}
