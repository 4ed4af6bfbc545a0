package secretbox_test

import (
	"fmt"
	"log/slog"

	"github.com/mcpgate/mcpgate/mrtr"
	"github.com/mcpgate/mcpgate/secretbox"
)

// A store seals a token bound to the row it is kept in.
func Example() {
	ring := mrtr.GenerateKeyRing(slog.New(slog.DiscardHandler)) // production: mrtr.KeyRingFromEnv
	box, err := secretbox.New(ring, "oauth-grant")
	if err != nil {
		panic(err)
	}
	row := secretbox.AAD("github", "tenant-a", "alice") // the row's key columns
	sealed, err := box.Seal([]byte("gho_token"), row)
	if err != nil {
		panic(err)
	}
	plain, err := box.Open(sealed, row)
	fmt.Println(string(plain), err)

	// The same bytes in bob's row do not open.
	_, err = box.Open(sealed, secretbox.AAD("github", "tenant-a", "bob"))
	fmt.Println(err)
	// Output:
	// gho_token <nil>
	// secretbox: record is invalid (altered, or sealed for another owner or purpose)
}
