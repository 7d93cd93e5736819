# The README's two commands: `make demo` (or `go run . demo`) runs the
# gateway against the in-repo emulated upstreams; `make test` passes the
# tests.
GO ?= go

.PHONY: test lint unit configs fuzz build demo

test: lint configs unit fuzz

# gofmt, go vet and staticcheck, all three clean on every change.
# staticcheck is pinned and fetched through the module proxy by `go run`, so
# it needs no install step and every machine runs the same checks; v0.8 is
# the first release that reads Go 1.26 code.
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

# The demo's files build only with -tags demo (server/demo.go), so the
# server package is checked a second time with it.
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt -l: not formatted:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags demo ./server/
	$(GO) run $(STATICCHECK) ./...
	$(GO) run $(STATICCHECK) -tags demo ./server/

# The e2e package runs every test through real binaries, one after
# another: about 10 minutes on a quiet 2-core machine, over 20 on one whose
# host is busy, so its bound leaves that room.
unit:
	$(GO) test -race -timeout 30m ./...

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
	./upstream/github/:FuzzStrictDecoders:30000x \
	./upstream/strictjson/:FuzzCheckCollisions:30000x \
	./handlers/forgejotools/:FuzzDecodeDiffCursor:40000x \
	./handlers/forgejotools/:FuzzEscapedLen:30000x \
	./server/diffread/:FuzzPage:20000x \
	./handlers/documents/:FuzzCursorVerify:20000x \
	./handlers/args/:FuzzDecode:70000x \
	./server/:FuzzToolArguments:10000x \
	./middleware/:FuzzMCPPeek:30000x \
	./handlers/toolset/:FuzzFrameReader:30000x \
	./handlers/jsonwire/:FuzzAppendString:30000x \
	./handlers/jsonwire/:FuzzAppendStringInString:30000x \
	./handlers/documents/:FuzzFragmentJSON:10000x \
	./handlers/documents/:FuzzValidUTF8:30000x \
	./store/audit/:FuzzCanonicalRecord:20000x \
	./store/:FuzzValidateDocumentPath:20000x \
	./store/:FuzzValidateBranch:20000x

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; rest=$${t#*:}; name=$${rest%%:*}; budget=$${FUZZTIME:-$${rest#*:}}; \
		echo "fuzz $$name ($$pkg, $$budget)"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $$budget -fuzzminimizetime 0 $$pkg; \
	done

# The binary reports the version `git describe` gives (a tag, or the commit
# with -dirty for uncommitted changes) in `agent-gateway version` (and
# --version), the landing page, the MCP server info and the
# agent_gateway_build_info metric. VERSION=v1.2.3 overrides it. A binary
# built without this stamp (go build, go install …@v1.2.3) reads the same
# facts from its build information instead (server/version.go): the module
# version, else the commit (12 hex, -dirty) and its time, else "dev".
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)

# The shipped binary: no symbol table, DWARF or build paths (stack traces
# keep function names and lines); docs/performance.md "Binary size". It is
# what scripts run (README, docs/deploy.md): `go run` replaces a program's
# exit code with its own 1, so `agent-gateway diff`'s 2 and 3 reach only a
# caller of the built binary. BIN=path puts it elsewhere (the tests build
# it with this very rule into a scratch directory).
BIN ?= bin/agent-gateway
build:
	$(GO) build -trimpath -ldflags "-s -w -X github.com/agent-gateway/agent-gateway/server.Version=$(VERSION)" -o $(BIN) .

# `make demo`, the README's first command: the demo (the gateway with the
# emulated upstreams of test/ linked in, -tags demo) built once into
# DEMO_BIN and started with ARGS (make demo ARGS='--listen 127.0.0.1:9090').
# It says what it does before the compile starts: `go run . demo` cannot
# print while `go run` compiles, and then compiles a second time, the demo
# build. The binary is rebuilt when a Go file, go.mod or go.sum is newer
# than it; it is touched after each build, since go build leaves an
# up-to-date binary as it was. docs/performance.md "Demo start" has the
# cold and warm figures.
DEMO_BIN ?= bin/agent-gateway-demo
DEMO_SOURCES := go.mod go.sum $(shell find . -name '*.go' ! -name '*_test.go' ! -path './.git/*' ! -path '*/testdata/*' ! -path '*/node_modules/*' 2>/dev/null)
ARGS ?=

demo: $(DEMO_BIN)
	@exec $(DEMO_BIN) demo $(ARGS)

$(DEMO_BIN): $(DEMO_SOURCES)
	@echo "compiling the demo build (first run only; minutes on a small machine) …"
	@start=$$(date +%s); $(GO) build -tags demo -o $@ . && touch $@ && \
		echo "compiled the demo build in $$(( $$(date +%s) - start )) s: $@"
