# Pictor — `make run` starts the service, `make test` runs every test.
# Both install what they need first (as root on Debian 12).

SHELL        := /bin/bash
GO           ?= go
BIN          := bin/pictor
VERSION      ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
LDFLAGS      := -s -w -X main.version=$(VERSION)
TOOLS        := $(CURDIR)/.tools
STATICCHECK  := honnef.co/go/tools/cmd/staticcheck@v0.8.2

# System packages: Chromium and fonts for rendering, libvips for encoding.
RUN_PACKAGES  := chromium fonts-liberation fonts-noto-color-emoji fonts-noto-core fonts-dejavu-core \
                 libvips-dev pkg-config ca-certificates
TEST_PACKAGES := $(RUN_PACKAGES) poppler-utils

DATA_DIR     ?= ./data
ADDR         ?= 127.0.0.1:8080
TEST_TIMEOUT ?= 14m

.PHONY: help deps test-deps build run test test-short lint fmt bench clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

deps: ## install the system packages `make run` needs (idempotent)
	@./deploy/install-packages.sh $(RUN_PACKAGES)

test-deps: ## install the system packages `make test` needs (idempotent)
	@./deploy/install-packages.sh $(TEST_PACKAGES)

build: ## build ./bin/pictor
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/pictor

run: deps build ## install, build and start `pictor serve` on ./data
	./$(BIN) serve --data-dir $(DATA_DIR) --addr $(ADDR)

test: test-deps ## install, then run the whole test suite with the race detector
	$(GO) test -race -timeout $(TEST_TIMEOUT) ./...

test-short: ## run the quick tests only
	$(GO) test -short ./...

lint: ## go vet and staticcheck
	$(GO) vet ./...
	GOBIN=$(TOOLS) $(GO) install $(STATICCHECK)
	$(TOOLS)/staticcheck ./...

fmt: ## format the code
	gofmt -w $$(git ls-files '*.go')

bench: deps build ## run the load-benchmark harness and write its report
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean: ## remove build outputs
	rm -rf bin
