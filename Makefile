# make test: everything CI runs. It installs the real servers the tests use
# when they are missing (see tools/testdeps.sh), then vets and runs every test
# with the race detector. KSPIDER_REQUIRE_SERVERS=1 turns a missing server
# binary from a skip into a failure (see tools/testenv). The tests run in a
# network namespace of their own with only loopback (tools/loopback-only.sh,
# as root): nothing they do can reach beyond this machine. deps and vet run
# before it, with the network they need (apt, npm, Go modules).

GO ?= go
TEST_TIMEOUT ?= 40m

.PHONY: test deps vet build fuzz soak

test: deps vet
	KSPIDER_REQUIRE_SERVERS=1 tools/loopback-only.sh $(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

deps:
	@bash tools/testdeps.sh

vet:
	$(GO) vet ./...

build:
	$(GO) build -o kspider ./cmd/kspider

# fuzz runs every fuzz target for FUZZTIME each (seed corpora run in make test).
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

# soak kills a crawling node with SIGKILL at random moments (the first
# milliseconds, after pages are stored, right after they become durable),
# several times a round, on random deep and hostile test webs, then lets it
# finish and compares the store with the web's truth (spider/node_soak_test.go).
# Rounds run for SOAKTIME, each bounded at 10 minutes; a failed round keeps its
# data directory and the node's log under $TMPDIR/kspider-soak-*.
# SOAKARGS="-node.soak.seed=S -node.soak.round=R" runs one failed round again
# and again (its kills land at other moments each time).
# SOAKFLAGS=-race runs it with the race detector.
SOAKTIME ?= 10m
SOAKFLAGS ?=
SOAKARGS ?=
soak:
	$(GO) test $(SOAKFLAGS) -count=1 -run '^TestNodeSoak$$' -timeout 30m ./spider/ -node.soak=$(SOAKTIME) -test.v $(SOAKARGS)
