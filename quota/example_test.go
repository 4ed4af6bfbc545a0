package quota_test

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpgate/mcpgate/policy"
	"github.com/mcpgate/mcpgate/quota"
)

func Example() {
	l, err := quota.New([]quota.Rule{
		// Writes: 2 a minute per caller; reads are not limited here.
		{When: `!tool.annotations.readOnlyHint`, Per: quota.PerCaller, Limit: 2, Window: time.Minute},
	}, quota.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	caller := &policy.Caller{Subject: "alice"}
	createPet := &policy.Tool{Name: "createPet", API: "petstore", Method: "POST", Path: "/pets"}
	for range 3 {
		v, _ := l.Allow(context.Background(), &policy.Input{Caller: caller, Tool: createPet})
		if v.Allowed {
			fmt.Println("allowed")
		} else {
			fmt.Println(v.Message())
		}
	}
	// Output:
	// allowed
	// allowed
	// Too many calls: the gateway's quota is used up. Retry in 30s.
}
