package gateway

import "github.com/mcpgate/mcpgate/store"

// StoreBackends is the table of the store backends the gateway links in,
// for commands that read what serve keeps (mcpgate audit): opened through
// it, a location means exactly what it means to serve.
func StoreBackends() store.Openers { return storeBackends() }

// StoreLocation is the location the store setting names, its default (the
// SQLite file under the user's state directory) when it is empty.
func StoreLocation(setting string) string {
	if setting == "" {
		return "sqlite:" + defaultStorePath()
	}
	return setting
}
