# npugrade: `make run` starts the service with a local runner, `make test` runs
# every test (it installs what is missing and starts a throwaway Postgres).
SHELL := /bin/bash
GO ?= go
BIN := bin/npugrade
PG_DIR ?= /tmp/npugrade-test-pg-$(shell id -u)
ADDR ?= 127.0.0.1:8080
DB ?= sqlite://data/npugrade.db
# `npugrade --version`: the git description when there is one.
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/npugrade/npugrade/internal/buildinfo.version=$(VERSION)

# ENV is the grading environment `make run` grades in: auto (data/envs/cpu,
# which `make run` builds on first use), cpu, or host (this machine's Python,
# which lacks the PyTorch 2.x the exercises need).
ENV ?= auto

.PHONY: all build deps env run test test-go test-check test-fuzz bench latency cross lint clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/npugrade

# deps installs the notebook toolchain from Debian packages (nbconvert,
# ipykernel, CPU PyTorch, bubblewrap) when it is missing.
deps:
	@bash scripts/deps.sh

# env builds the cpu grading environment when missing (minutes the first
# time, progress printed) and reuses it after.
env: deps build
	@bash scripts/env.sh

run: deps build env
	@mkdir -p data
	$(BIN) serve --addr $(ADDR) --db $(DB) --local-runner 1 --print-admin-token --env $(ENV)

test: deps
	@bash scripts/test.sh

# The parts of `make test`, for quick local loops (no Postgres: SQLite only).
test-go:
	$(GO) test -short ./...

test-check: build
	$(BIN) check --profile cpu --jobs 2 --junit out/check-junit.xml

test-fuzz:
	@bash scripts/fuzz.sh 100000x

# `make bench` runs every benchmark; `make bench latency` only the
# per-chapter latency one (BenchmarkLatency).
bench: deps build
	@bash scripts/bench.sh $(filter latency,$(MAKECMDGOALS))

latency:
	@:

cross:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o bin/npugrade-linux-arm64 ./cmd/npugrade
	GOOS=linux GOARCH=amd64 CGO_ENABLED=0 $(GO) build -ldflags "$(LDFLAGS)" -o bin/npugrade-linux-amd64 ./cmd/npugrade

lint:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...

clean:
	rm -rf bin out
