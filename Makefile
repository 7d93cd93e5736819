# The README's two commands: `go run . demo` runs the gateway against the
# in-repo emulated upstreams; `make test` passes the tests.
GO ?= go

.PHONY: test vet unit configs fuzz build

test: vet configs unit fuzz

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -timeout 20m ./...

# Deployment files: Prometheus config and alert rules through promtool
# (Debian package prometheus; .ci/run installs it).
configs:
	promtool check config configs/prometheus/prometheus.yml
	promtool check rules configs/prometheus/alerts.yml

# A short run of the parsers' fuzz targets on every test run; the seed
# corpora are committed under each package's testdata/fuzz. go test -fuzz
# takes one target of one package at a time. Minimizing is off in these
# short runs: a minimization still running when -fuzztime ends fails the run
# with "context deadline exceeded" although nothing was found.
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzVerify$$' -fuzztime 20s -fuzzminimizetime 0 ./upstream/forgejo/evidence/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeDiffCursor$$' -fuzztime 10s -fuzzminimizetime 0 ./handlers/forgejotools/

build:
	$(GO) build -o bin/agent-gateway .
