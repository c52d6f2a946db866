# drover — see README.md. `make demo` and `make test` install what is missing first.
GO        ?= go
BIN       := bin/drover
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo none)
DATE      ?= $(shell date -u +%Y-%m-%dT%H:%M:%SZ)
LDFLAGS   := -X drover/cli.version=$(VERSION) -X drover/cli.commit=$(COMMIT) -X drover/cli.date=$(DATE)
BENCHTIME ?= 1s

.PHONY: all build demo test soak redis-faults frontier verify bench bench-peers deps deps-test release-snapshot clean

all: build

deps:
	@scripts/deps.sh build

deps-test:
	@scripts/deps.sh test

build: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) .

## demo: build drover and run the local demo crawl with the console.
demo: build
	./$(BIN) demo

## test: the whole suite with the race detector (this is what CI runs).
test: deps-test
	$(GO) test -race -count=1 -timeout 30m ./...

## soak: the crash soak (real serve, workers, producer; worker and coordinator
## SIGKILLs, a SIGSTOP) at full length, minutes; `make test` runs a short one.
soak: deps-test
	SOAK=full $(GO) test -count=1 -run '^TestSoakCrashes$$' -timeout 60m -v ./cli

## redis-faults: the Redis ledger's fault tests at full size (a master SIGKILLed under 50,000 keys with
## WAIT and without, slots moved under 50,000, a shard down under 20,000, a coordinator process
## SIGKILLed holding 20,000);
## `make test` runs short ones.
redis-faults: deps-test
	DROVER_REDIS_FAULTS=full $(GO) test -count=1 -run '^(TestMasterFailover|TestMasterFailoverNoWait|TestReshardUnderLoad|TestShardDown|TestCoordinatorKilled)$$' -timeout 20m -v ./store/redis

## frontier: queued jobs beyond RAM at full size: 2,000,000 jobs through
## drover submit - into serve --store-resident-jobs 100000, RSS at most 400 MB
## throughout (sampled during the submit, a kill -9 and restart, and the
## drain), every job drained once, in order (make test runs a small one).
frontier: deps-test
	FRONTIER_JOBS=2000000 FRONTIER_RESIDENT=100000 FRONTIER_MAX_RSS_MB=400 $(GO) test -count=1 -run '^TestFrontierBeyondRAM$$' -timeout 90m -v ./cli

## verify: formatting, vet, staticcheck and a tidy go.mod.
verify: deps
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...
	@cp go.mod /tmp/drover.go.mod.bak; cp go.sum /tmp/drover.go.sum.bak; $(GO) mod tidy; \
	  if ! git diff --quiet -- go.mod go.sum; then git diff -- go.mod go.sum; cp /tmp/drover.go.mod.bak go.mod; cp /tmp/drover.go.sum.bak go.sum; echo "go.mod is not tidy"; exit 1; fi

## bench: every benchmark, once; see docs/BENCHMARKS.md for the figures.
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) ./...

## bench-peers: drover side by side with Redis SADD, asynq and colly, in one
## run (tens of minutes; PEERS_FLAGS=-short for a smaller run); installs
## redis-server first. See docs/BENCHMARKS.md.
bench-peers: build
	@scripts/deps.sh bench
	$(GO) run ./bench/peers -drover $(BIN) $(PEERS_FLAGS)

release-snapshot:
	goreleaser release --snapshot --clean

clean:
	rm -rf bin dist
