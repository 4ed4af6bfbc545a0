# Shortcuts; scripts/test.sh is the test command the README and CI use.
.PHONY: build test quick conformance bench
build:
	go build -o bin/mcpgate ./cmd/mcpgate
test:
	scripts/test.sh
quick:
	QUICK=1 scripts/test.sh
conformance:
	scripts/conformance.sh
bench:
	go test -run '^$$' -bench . -benchmem ./mcp ./mrtr ./openapi ./proxy
