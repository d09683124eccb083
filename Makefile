# Rave Backend. A newcomer needs two commands: `make run` (the whole stack, locally)
# and `make test` (every test, against a throwaway PostgreSQL). See README.md.

SHELL := /bin/bash
SWIFT ?= swift
CONFIG ?= debug
BUILD_FLAGS ?= -Xswiftc -warnings-as-errors
PROTO_FILES := $(shell find Proto -name '*.proto' | sort)

# Debian packages the build, the tests, and `make run` need.
DEB_PACKAGES := libprotobuf-c-dev protobuf-c-compiler protobuf-compiler libssl-dev libpq-dev \
	postgresql postgresql-contrib openssl python3-protobuf python3-prometheus-client procps \
	libcurl4-openssl-dev libnghttp2-dev python3-h2 python3-yaml python3-venv systemd redis-server redis-tools curl \
	wrk nghttp2-client chromium chromium-driver python3-selenium

.PHONY: deps proto proto-check build release test test-swift bench soak fuzz fmt lint certs run stop reset clean

## deps: the Debian packages above, then the Python tools of scripts/python-requirements.txt in .venv.
deps:
	@scripts/install-deps.sh $(DEB_PACKAGES)
	@scripts/install-python-deps.sh

## proto: regenerate the C (protoc-c) and Swift (rave-protogen) code from Proto/.
proto: deps
	@scripts/generate-proto.sh

## proto-check: fail when the committed generated code differs from what `make proto` makes.
proto-check: deps
	@scripts/generate-proto.sh --check

build: deps
	$(SWIFT) build -c $(CONFIG) $(BUILD_FLAGS)

release:
	@$(MAKE) --no-print-directory build CONFIG=release

## test: generated code is current, lint passes, deploy/ and docs/openapi.json check out, then every test against a
## throwaway PostgreSQL, then the browser tests (screenshots in .test-output/demo/) and schemathesis against whole
## stacks (scripts/browser-tests.sh, scripts/api-tests.sh).
test: deps proto-check lint
	scripts/check-deploy.sh
	scripts/check-openapi.sh
	$(SWIFT) build --build-tests $(BUILD_FLAGS)
	scripts/with-postgres.sh scripts/run-tests.sh
	scripts/browser-tests.sh
	scripts/api-tests.sh

## bench: release builds of ravectl, rave-bench and every service, then every benchmark
## (docs/BENCHMARKS.md); results in .bench/.
bench: deps
	scripts/bench.sh

## soak: the failure test, the whole stack under load while processes die (RAVE_SOAK_SECONDS, default 300); .bench/soak.json.
soak: deps
	scripts/soak.sh

fuzz: deps
	scripts/fuzz.sh

# Hand-written Swift; generated code is formatted by scripts/generate-proto.sh and checked by proto-check.
SWIFT_SOURCES = Package.swift $(shell find Shared Services Benchmarks Tools Tests Fuzz -name '*.swift' -not -path '*/Generated/*' | sort)

fmt:
	@echo "swift format --in-place (hand-written Swift)"
	@$(SWIFT) format --in-place --parallel $(SWIFT_SOURCES)

lint:
	@echo "swift format lint --strict (hand-written Swift)"
	@$(SWIFT) format lint --strict --parallel $(SWIFT_SOURCES)

certs: build
	.build/$(CONFIG)/ravectl certs --out .run/certs

clean:
	rm -rf .build .bench .fuzz

## run: the whole stack locally (PostgreSQL under .run/, certificates, every built service); Ctrl-C stops it.
run: deps
	$(SWIFT) build -c release -q
	deploy/local/run.sh

## stop: stop the development PostgreSQL that `make run` leaves running.
stop:
	deploy/local/postgres.sh stop

## reset: stop and delete all local state (database, certificates, logs).
reset: stop
	rm -rf .run
