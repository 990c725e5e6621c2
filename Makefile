# Pictor — `make run` starts the service, `make test` runs every test.
# Both install what they need first (as root on Debian 12).

SHELL        := /bin/bash
GO           ?= go
BIN          := bin/pictor
VERSION      ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS      := -s -w -X main.version=$(VERSION)
TOOLS        := $(CURDIR)/.tools
# Every build here (and each go command the tests run, which inherit the
# environment) compiles pebble with its pure-Go zstd (klauspost/compress)
# instead of the cgo binding to the C library, which the stores never use
# (kv writes Snappy, the edge's cache no compression) and whose C sources
# were a fifth of a cold build's CPU; and without DWARF debugging data, which
# only a debugger reads (stack traces, race reports and profiles use the
# binary's own tables) and which cost a cold build 9 % of its CPU
# (docs/decisions.md, "make test's time"). `make build` strips both anyway.
# They come after the caller's own GOFLAGS, once: a sub-make (test-deps) finds
# them in its environment already.
BUILD_GOFLAGS := -tags=pebblegozstd -gcflags=all=-dwarf=false
export GOFLAGS := $(strip $(filter-out $(BUILD_GOFLAGS),$(GOFLAGS)) $(BUILD_GOFLAGS))
STATICCHECK  := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# The S3-compatible server the storage tests write to (a real one, over a
# temporary directory), pinned; origin/storage/s3test finds it here.
VERSITYGW     := github.com/versity/versitygw/cmd/versitygw@v1.8.0
VERSITYGW_BIN := $(TOOLS)/versitygw-v1.8.0/versitygw
# oapi-codegen: the generator the generated-client test runs on the OpenAPI document.
OAPICODEGEN     := github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2
OAPICODEGEN_BIN := $(TOOLS)/oapi-codegen-v2.8.2/oapi-codegen
# The generated client's own module (committed go.mod and go.sum): test-deps
# downloads what it names, so the test builds it with GOPROXY=off.
OAPICLIENT      := cmd/pictor/testdata/openapiclient

# System packages: Chromium (the renders use its headless shell, the same
# build without the browser window) and fonts for rendering, libvips for
# encoding, clang and wasm-ld for the template sandbox's evaluator
# (wasm/evaluator).
RUN_PACKAGES  := chromium chromium-headless-shell fonts-liberation fonts-noto-color-emoji fonts-noto-core fonts-dejavu-core \
                 libvips-dev pkg-config ca-certificates clang-14 lld-14
# tinyproxy: the forward proxy the proxy tests route renders through;
# postgresql: the server kv/pgkv/pgtest runs privately for kv/pgkv;
# curl, jq: the README's quick start, which cmd/pictor's tests run;
# nginx-light: the bench's baseline, whose own tests (bench/baseline) serve through it.
TEST_PACKAGES := $(RUN_PACKAGES) poppler-utils nodejs tinyproxy postgresql curl jq nginx-light
TSCLIENT      := origin/testdata/tsclient
MCPCLIENT     := origin/testdata/mcpclient
HBSJS         := wasm/testdata/handlebarsjs
AXE           := origin/testdata/axe

DATA_DIR     ?= ./data
ADDR         ?= 127.0.0.1:8080
TEST_TIMEOUT ?= 14m
BENCH_FLAGS  ?=
FUZZTIME     ?= 30s

.PHONY: help deps test-deps build run test test-short hostile fuzz lint fmt bench apidocs clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

deps: ## install the system packages `make run` needs and Chromium's system user (idempotent)
	@./deploy/install-packages.sh $(RUN_PACKAGES)
	@./deploy/chromium-user.sh

# test-deps runs its four parts at once (make -j): the system packages (apt, on a fresh machine about
# a minute of downloading and unpacking), the Go tools (compiling versitygw and oapi-codegen, about two
# minutes on two cores), the Go modules and the npm fixtures (the network). Only what needs npm from apt
# waits for apt; the Go tools need nothing apt installs. Each part's output comes out when it ends.
test-deps: ## install the system packages, Go tools, Go modules and npm fixtures `make test` needs (idempotent)
	@$(MAKE) --no-print-directory -j4 -Otarget test-packages test-tools test-modules test-npm

.PHONY: test-packages test-tools test-modules test-npm
test-packages:
	@./deploy/install-packages.sh $(TEST_PACKAGES)
	@./deploy/chromium-user.sh

test-tools:
	@[ -x $(VERSITYGW_BIN) ] || GOBIN=$(dir $(VERSITYGW_BIN)) $(GO) install $(VERSITYGW)
	@[ -x $(OAPICODEGEN_BIN) ] || GOBIN=$(dir $(OAPICODEGEN_BIN)) $(GO) install $(OAPICODEGEN)

# Every module the tests build with, so that the builds after test-deps do not wait on the network.
test-modules:
	@$(GO) mod download
	@cd $(OAPICLIENT) && $(GO) mod download

# Without npm on the machine, npm comes from apt after the other system packages (apt takes one
# install at a time).
test-npm: $(if $(shell command -v npm),,test-packages)
	@command -v npm >/dev/null || ./deploy/install-packages.sh npm
	@for d in $(TSCLIENT) $(MCPCLIENT) $(HBSJS) $(AXE) origin/console/web; do \
		[ $$d/node_modules/.package-lock.json -nt $$d/package-lock.json ] || \
		(cd $$d && npm ci --no-audit --no-fund --loglevel=error) || exit 1; \
	done

.PHONY: console-assets
console-assets: ## bundle the console's script and style (origin/console/web, npm-pinned) into origin/console/assets/dist; commit what changes
	@command -v npm >/dev/null || ./deploy/install-packages.sh npm
	@[ origin/console/web/node_modules/.package-lock.json -nt origin/console/web/package-lock.json ] || \
		(cd origin/console/web && npm ci --no-audit --no-fund --loglevel=error)
	$(GO) run ./origin/console/assets/build

build: ## build ./bin/pictor and the template sandbox's modules (wasm/guest.wasm, wasm/evaluator.wasm)
	./wasm/build.sh
	./wasm/evaluator/build.sh
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/pictor

run: deps build ## install, build and start `pictor serve` on ./data
	./$(BIN) serve --data-dir $(DATA_DIR) --addr $(ADDR)

# The allocation tests count allocations, which mean nothing under the race
# detector (it makes sync.Pool drop items at random): they build without it
# (//go:build !race) and `make test` runs them in a second, race-free pass
# over these packages only (edge's TestRaceFreePassRunsEveryRaceFreeTest keeps
# the list and the pattern right), each linked a second time.
RACE_FREE_PKGS := ./edge ./edge/cache
RACE_FREE_RUN  := Allocat

# The race runtime sleeps a second before a program built with -race exits (GORACE's
# atexit_sleep_ms, 1000 by default, to catch races at exit): each test binary, and each test
# process one of them starts, held one of go test's two slots idle that long, a minute and a half
# of a run. The tests end their goroutines themselves; the race detector still checks all they do.
RACE_ENV := GORACE="$(GORACE) atexit_sleep_ms=0"

# go test runs one package more at once than the machine has cores (-p; its default is as many): the
# test binaries wait on Chromium, PostgreSQL and loopback sockets for about a quarter of their time,
# which the extra package fills. On two cores a warm run took 322 s against 374-382 s (four at once:
# 334 s), and a fresh clone's make test 639 s against 685 s (docs/decisions.md, "make test's time").
TEST_P ?= $(shell echo $$(( $$(nproc) + 1 )))
# The race-detector run of make test and of make hostile (a part of it), the same in both.
RACE_TEST = $(RACE_ENV) $(GO) test -race -p $(TEST_P) -timeout $(TEST_TIMEOUT)

# The first line builds the binary that the tests of cmd/pictor, deploy/clustertest and
# deploy/observability run as a process (without the race detector), where they look for it
# (bench/pictor.Build): the go command relinks it only when a source changed, so the run links it
# once, and on a fresh machine the packages do not compile it from nothing at the same time.
test: test-deps ## install, then run the whole test suite with the race detector, and the allocation tests without it
	$(GO) build -o bin/test/pictor ./cmd/pictor
	$(RACE_TEST) ./...
	$(GO) test -count=1 -run '$(RACE_FREE_RUN)' $(RACE_FREE_PKGS)

HOSTILE := Hostile|YAMLReadsAsTheJSON|MalformedFraming|UnreadBody|ImageWithoutFormat|SlowClients|ConnectionLimits|AcceptErrors|StopIsBounded|DescriptorExhaustion|ServeUntilDoneIsBounded|EdgeLimitFlags|MainDocument|FailuresNeverReach|RefundsAreExact|SitePagesAreCaptured|OwnAnswersAreMarked|AnswerCannotBeForged|ETagSurvives|PortAnswers|NetHTTPAnswers|SlowBody|BodyTimeout|MalformedRequestInput|QueryNames|FormFieldLimits|ListNewestFirst|ChromiumSandboxed|SiteIsolation

hostile: test-deps ## run only the hostile suite (raw sockets, real Chromium; part of make test)
	$(RACE_TEST) -run '$(HOSTILE)' ./...

test-short: ## run the quick tests only
	$(GO) test -short ./...

fuzz: test-deps ## run every fuzz target for FUZZTIME (30s) each; `make test` runs their seed corpora only
	@set -e; for f in $$(git grep -l '^func Fuzz' -- '*_test.go'); do \
		for n in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== $$n ./$$(dirname $$f)"; \
			$(GO) test -run '^$$' -fuzz "^$$n\$$" -fuzztime $(FUZZTIME) ./$$(dirname $$f); \
		done; \
	done

lint: ## go vet and staticcheck
	$(GO) vet ./...
	GOBIN=$(TOOLS) $(GO) install $(STATICCHECK)
	$(TOOLS)/staticcheck ./...

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')

bench: deps build ## run the load-benchmark harness; report in bench/out/ (BENCH_FLAGS="--duration 10s --scenarios render-card")
	$(GO) run ./bench/cmd/pictor-bench --pictor ./$(BIN) --out bench/out $(BENCH_FLAGS)

apidocs: ## refetch the /docs page's Redoc bundle from npm at the version pinned in origin/contract/apidocs/apidocs.go; commit what changes
	@command -v npm >/dev/null || ./deploy/install-packages.sh npm
	./origin/contract/apidocs/fetch-redoc.sh

clean: ## remove build outputs
	rm -rf bin
