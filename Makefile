# The README's two commands: `go run . demo` runs the gateway against the
# in-repo emulated upstreams; `make test` passes the tests.
GO ?= go

.PHONY: test vet unit configs build

test: vet configs unit

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -timeout 20m ./...

# Deployment files: Prometheus config and alert rules through promtool
# (Debian package prometheus; .ci/run installs it).
configs:
	promtool check config configs/prometheus/prometheus.yml
	promtool check rules configs/prometheus/alerts.yml

build:
	$(GO) build -o bin/agent-gateway .
