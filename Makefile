# The README's two commands: `go run . demo` runs the gateway against the
# in-repo emulated upstreams; `make test` passes the tests.
GO ?= go

.PHONY: test vet unit build

test: vet unit

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -timeout 20m ./...

build:
	$(GO) build -o bin/agent-gateway .
