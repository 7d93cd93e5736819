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

# A short run of every fuzz target on every test run; each parser of
# untrusted input has one (docs/fuzzing.md lists them and the commands for
# longer runs). The seed corpora are committed under each package's
# testdata/fuzz. go test -fuzz takes one target of one package at a time.
#
# Each target runs a fixed number of executions (about 5-10 s on a 2-core
# machine, some 2 minutes in all), not a duration: with a duration, Go 1.26's fuzz coordinator can
# fail a clean run with "context deadline exceeded" when -fuzztime ends
# while a worker is busy (golang/go#75804, fixed in Go 1.27). Minimizing is
# off for the same reason. FUZZTIME=2000000x (or a duration, accepting the
# race) overrides every target's budget.
FUZZTIME ?=
FUZZ_TARGETS = \
	./upstream/forgejo/evidence/:FuzzVerify:60000x \
	./upstream/forgejo/:FuzzGrantJSON:30000x \
	./upstream/forgejo/:FuzzLinkHeader:30000x \
	./upstream/github/:FuzzContentsJSON:40000x \
	./upstream/github/:FuzzTokenAnswer:40000x \
	./handlers/forgejotools/:FuzzDecodeDiffCursor:40000x \
	./handlers/forgejotools/:FuzzEscapedLen:30000x \
	./server/diffread/:FuzzPage:20000x \
	./handlers/documents/:FuzzCursorVerify:20000x \
	./handlers/args/:FuzzDecode:70000x \
	./server/:FuzzToolArguments:10000x \
	./middleware/:FuzzMCPPeek:30000x \
	./store/:FuzzValidateDocumentPath:20000x \
	./store/:FuzzValidateBranch:20000x

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; budget=$${FUZZTIME:-$${rest#*:}}; \
		echo "fuzz $$name ($$pkg, $$budget)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget -fuzzminimizetime 0 $$pkg; \
	done

build:
	$(GO) build -o bin/agent-gateway .
