# The two commands a newcomer needs: `make run` and `make test`.
SHELL := /bin/bash
GO    ?= go
SERVICES := gateway identity agents tickets testing webhooks allinone cli
PKGS  := ./pkg/... ./proto-events/... $(foreach s,$(SERVICES),./services/$(s)/...)
STORE_PKGS := ./pkg/embedded/docstore/... ./services/allinone ./services/allinone/bench ./services/webhooks/bench
LONG_PKGS  := ./services/allinone/stack ./services/allinone/multiprocess

.PHONY: run cli test test-cluster chaos deploy-check test-unit test-docker bench bench-million bench-million-tickets lint proto proto-check fmt-check images up down fuzz

## run: the whole platform in one process on embedded NATS + FerretDB (http://127.0.0.1:8080)
run:
	$(GO) run ./services/allinone

## cli: the voiceai command line, built to bin/voiceai (see README: Command line)
cli:
	$(GO) build -o bin/voiceai ./services/cli/cmd/voiceai

## test: everything CI checks — generated code is fresh, formatting, vet, every test with -race, the cluster tier
# vet runs inside go test (-vet=all: every analyzer `go vet` runs, on every package,
# tests or none): one go command compiles each package once for both, and a package's
# tests start as soon as it is built, beside the compile of the rest (a separate
# `go vet` first made every test wait for the whole vet).
# deploy-check (its own module: Helm and client-go to download and compile on a cold
# cache) runs from the start beside the rest at the lowest CPU priority: it takes only
# what vet and the tests leave idle (downloads, waits on kills, elections, time-outs),
# so their timing stays theirs; its output follows theirs.
# Test binaries link without DWARF (-ldflags=-w): a third less link work for
# each of the ~65 binaries, and nothing lost in a stack trace or a race report
# (those come from the runtime's own tables); debug with `go test -c` as usual.
# The packages that link the embedded store (FerretDB on SQLite: STORE_PKGS: the store,
# the all-in-one binary, the benches) are vetted and tested without -race: every other
# test reaches the store as a process built without it (pkg/testenv), so no race-enabled
# build compiles FerretDB and SQLite. They run after the other tests, once the
# multi-process tier's build has compiled what they need.
# LONG_PKGS come first: go test starts the packages' tests in the order given, and these
# run longest (mostly waiting), so they overlap the compile of the rest, not follow it.
test: proto-check fmt-check
	@log=$$(mktemp); nice -n 19 sh -c '$(DEPLOY_CHECK)' >$$log 2>&1 & dc=$$!; \
	race="$$($(GO) list $(LONG_PKGS)) $$($(GO) list $(PKGS) | grep -vxF -f <($(GO) list $(STORE_PKGS) $(LONG_PKGS)))" && \
	echo "+ go test -race -vet=all \$$(LONG_PKGS) \$$(PKGS but STORE_PKGS and LONG_PKGS)" && \
	$(GO) test -race -vet=all -ldflags=-w -count=1 -timeout 30m $$race && \
	echo "+ go test -vet=all \$$(STORE_PKGS)" && $(GO) test -vet=all -ldflags=-w -count=1 $(STORE_PKGS) && \
	echo "+ make test-cluster" && $(TEST_CLUSTER); rc=$$?; \
	wait $$dc; drc=$$?; echo "+ make deploy-check (beside the rest)"; cat $$log; rm -f $$log; \
	if [ $$rc -ne 0 ]; then exit $$rc; fi; if [ $$drc -ne 0 ]; then echo "make deploy-check failed"; exit $$drc; fi

## deploy-check: the deployment artefacts, statically: the Helm chart renders objects that decode strictly
##   (client-go's scheme; KEDA's CRD schema), docker-compose.yml loads under the Compose schema with the
##   production shape, the NATS cluster config parses as nats-server reads it. Its own module (Helm and
##   Kubernetes stay out of the services' dependencies).
DEPLOY_CHECK = cd deploy/check && GOWORK=off $(GO) test -vet=all -ldflags=-w -count=1 ./...
deploy-check:
	$(DEPLOY_CHECK)

## test-cluster: the production shape under chaos — three NATS nodes (R3), every service as its own
##   binary (two replicas each), node kills, a partition (in a network namespace, where allowed),
##   service kills and a rolling restart under load; prints what clients saw per scenario. Fails on
##   safety (a lost or duplicated write, a 500, a 503 without Retry-After, a process that died) and on
##   a cluster or client not recovered 30 s after a fault ended; the error windows are printed only
TEST_CLUSTER = VOICEAI_TEST_CLUSTER=1 $(GO) test -race -vet=off -ldflags=-w -count=1 -timeout 20m -v -run '^TestCluster' ./services/allinone/multiprocess/
test-cluster:
	$(TEST_CLUSTER)

## chaos: the liveness report — the cluster tier's scenarios CHAOS_RUNS times (default 5), each run on a
##   fresh cluster; prints per scenario and kind of request the error windows (p50, max) against the
##   elections the runs measured, and fails when a window exceeds its run's election + 2 s (2 s where no
##   node is lost), or on any check of the tier. CHAOS_RUNS=10 make chaos
CHAOS_RUNS ?= 5
chaos:
	VOICEAI_TEST_CLUSTER=1 VOICEAI_CHAOS_RUNS=$(CHAOS_RUNS) VOICEAI_CHAOS_STRICT=1 $(GO) test -race -count=1 \
		-timeout $$(( $(CHAOS_RUNS) * 15 ))m -v -run '^TestClusterChaos$$' ./services/allinone/multiprocess/

## test-docker: the container tier (official NATS and MongoDB images); needs a Docker engine
test-docker:
	VOICEAI_TEST_DOCKER=1 $(GO) test -race -count=1 -run Docker ./pkg/testenv/...
	VOICEAI_TEST_DOCKER=1 $(GO) test -race -count=1 -run 'Conforms|UseAnIndex' ./services/agents/adapters/ ./services/tickets/adapters/ ./services/testing/adapters/ ./services/identity/adapters/
	cd deploy/check && VOICEAI_TEST_DOCKER=1 GOWORK=off $(GO) test -count=1 -v -run TestComposeStackServes ./...

## bench: every speed and memory goal, each as ratios against a baseline measured in the same run:
##   gateway overhead vs in-process handler vs the HTTP and NATS round trips it makes, and auth+rate-limit cost;
##   webhook deliveries/s for 1 and 10 webhooks and publish-to-delivery latency at 200 events/s,
##   durable delivery log reads at 6,000 and 60,000 attempts;
##   agent testing: orchestration vs raw work queue, runner scaling, the 250,000-run invocation;
##   tickets: creates vs raw appends, listing lag, listing p50 at 1k/10k/100k, restart at 100k,
##   tests, invocations and conversations listings at 10k, conversations under each triage filter at 100k, the console's queue page at 100k in Chromium;
##   judges against the human-labelled sets: agreement, kappa, false passes, p95 per decision, memory;
##   the cluster: creates and webhook deliveries on the cluster tier's three nodes at R3 vs raw R3 appends,
##   the same on one node at R1, and the cost of replication as one ratio (about 30 s)
bench:
	$(GO) run ./services/allinone/bench
	$(GO) run ./services/webhooks/bench
	$(GO) run ./services/allinone/testingbench
	$(GO) run ./services/allinone/ticketsbench
	$(GO) run ./services/allinone/clusterbench
	$(GO) run ./services/testing/judgeeval/cmd/judgebench

## bench-million: a million conversations with realistic transcripts (10-40 turns) ingested as call stacks
##   send them (POST /v1/convai/events) into the embedded default: the ingest rate against raw appends, disk per
##   conversation, peak memory, listing p50 with and without filters, one conversation, restart after a crash.
##   Not in `bench`: it takes about an hour on 2 cores. MILLION_N sets the size, MILLION_INDEX the read index.
MILLION_N ?= 1000000
MILLION_INDEX ?= memory
bench-million:
	$(GO) run ./services/allinone/ticketsbench -section million -conversations $(MILLION_N) -read-index $(MILLION_INDEX)

## bench-million-tickets: a million tickets created through the gateway as a QA team does (a third then changed,
##   a tenth commented on): the write rate against raw appends, disk per ticket, peak memory, listing p50 under
##   each filter and search, one ticket, restart after a crash. Not in `bench`. MILLION_TICKETS sets the size.
MILLION_TICKETS ?= 1000000
bench-million-tickets:
	$(GO) run ./services/allinone/ticketsbench -section million-tickets -tickets $(MILLION_TICKETS)

## fuzz: a short run of every fuzz target over untrusted input
fuzz:
	$(GO) test -run XXX -fuzz FuzzCheck -fuzztime 30s ./pkg/ids/
	$(GO) test -run XXX -fuzz FuzzSubjectBuilders -fuzztime 30s ./proto-events/
	$(GO) test -run XXX -fuzz FuzzDecodeJSON -fuzztime 30s ./pkg/httpx/
	$(GO) test -run XXX -fuzz FuzzTraceparentsAsThePropagator -fuzztime 30s ./pkg/tracing/
	$(GO) test -run XXX -fuzz FuzzDecode -fuzztime 30s ./pkg/cursor/
	$(GO) test -run XXX -fuzz FuzzIngestBody -fuzztime 30s ./services/webhooks/ports/
	$(GO) test -run XXX -fuzz FuzzCreateBody -fuzztime 30s ./services/webhooks/ports/
	$(GO) test -run XXX -fuzz FuzzParseResponse -fuzztime 30s ./pkg/llm/
	$(GO) test -run XXX -fuzz FuzzStream -fuzztime 30s ./pkg/llm/
	$(GO) test -run XXX -fuzz FuzzParseAPIError -fuzztime 30s ./pkg/llm/
	$(GO) test -run XXX -fuzz FuzzRunTestsBody -fuzztime 30s ./services/testing/ports/
	$(GO) test -run XXX -fuzz FuzzTestBody -fuzztime 30s ./services/testing/ports/
	$(GO) test -run XXX -fuzz FuzzFromConversationBody -fuzztime 30s ./services/testing/ports/
	$(GO) test -run XXX -fuzz FuzzFullMessagesAsBefore -fuzztime 30s ./services/testing/ports/
	$(GO) test -run XXX -fuzz FuzzCheckJSONValues -fuzztime 30s ./pkg/apperr/
	$(GO) test -run XXX -fuzz FuzzCheckBody -fuzztime 30s ./pkg/api/
	$(GO) test -run XXX -fuzz FuzzCheckQuery -fuzztime 30s ./pkg/api/
	$(GO) test -run XXX -fuzz FuzzPathMatchesAsTheTemplateDoes -fuzztime 30s ./pkg/api/
	$(GO) test -run XXX -fuzz FuzzCheckURL -fuzztime 30s ./pkg/outbound/
	$(GO) test -run XXX -fuzz FuzzOffline -fuzztime 30s ./services/testing/offline/
	$(GO) test -run XXX -fuzz FuzzDecide -fuzztime 30s ./services/testing/meaning/
	$(GO) test -run XXX -fuzz FuzzSearchWords -fuzztime 30s ./services/tickets/app/
	$(GO) test -run XXX -fuzz FuzzDecodesTicket -fuzztime 30s ./services/tickets/app/

## lint: formatting, vet and proto lint
lint: fmt-check
	$(GO) vet $(PKGS)
	cd proto-events && GOWORK=off go tool -modfile=tools/go.mod buf lint

## proto: regenerate proto-events Go code with the pinned buf and protoc-gen-go
proto:
	./proto-events/generate.sh

proto-check:
	./proto-events/check-generated.sh

fmt-check:
	@bad=$$(gofmt -l pkg proto-events services deploy/check | grep -v '\.pb\.go$$'); if [ -n "$$bad" ]; then echo "gofmt needed:"; echo "$$bad"; exit 1; fi

## images / up: the production-shaped stack (needs Docker)
images:
	docker compose build
up:
	docker compose up -d --wait
down:
	docker compose down
