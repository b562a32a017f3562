# dfdu — thin, self-documenting Makefile. `make help` lists the targets.
CARGO    ?= cargo
DIR      ?= /work/bench/tree-1m
ENTRIES  ?= 1000000
WIDE     ?=
SEED     ?= 1
RUNS     ?= 10
COLD     ?=
MUSL_X86 := x86_64-unknown-linux-musl
MUSL_ARM := aarch64-unknown-linux-musl

.PHONY: help build release static test test-du test-windows lint check-targets bench bench-deps clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 16

build: ## debug build
	$(CARGO) build

release: ## optimised build: target/release/dfdu
	$(CARGO) build --release --bin dfdu

static: ## static musl binaries for x86_64 and aarch64 (profile "static"), with their sizes
	$(CARGO) build --profile static --bin dfdu --target $(MUSL_X86)
	@ls -l target/$(MUSL_X86)/static/dfdu | awk '{print "x86_64 static: " $$5 " bytes"}'
	@file target/$(MUSL_X86)/static/dfdu
	@if rustup target list --installed | grep -q $(MUSL_ARM); then \
	  CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld \
	  $(CARGO) build --profile static --bin dfdu --target $(MUSL_ARM) && \
	  ls -l target/$(MUSL_ARM)/static/dfdu | awk '{print "aarch64 static: " $$5 " bytes"}'; \
	else echo "aarch64-unknown-linux-musl target not installed: skipped"; fi

test: lint check-targets ## everything a developer runs: format, lints, other targets, all tests
	$(CARGO) test --release
	CARGO=$(CARGO) tests/wine/run

test-windows: ## cross-build dfdu.exe, run it and its platform tests under Wine, compare with Linux du
	CARGO=$(CARGO) tests/wine/run

lint: ## rustfmt and clippy (warnings are errors)
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

check-targets: ## cargo check for macOS and Windows, clippy for macOS (no SDK here, so no link)
	rustup target add aarch64-apple-darwin x86_64-apple-darwin x86_64-pc-windows-gnu >/dev/null
	$(CARGO) check --bin dfdu --target aarch64-apple-darwin
	$(CARGO) check --bin dfdu --target x86_64-apple-darwin
	$(CARGO) clippy --target aarch64-apple-darwin --bin dfdu -- -D warnings
	$(CARGO) clippy --target x86_64-apple-darwin --bin dfdu -- -D warnings
	$(CARGO) check --bin dfdu --target x86_64-pc-windows-gnu

bench-deps: ## install the peer tools the benchmark compares against
	apt-get install -y gdu ncdu hyperfine time
	$(CARGO) install --locked dua-cli du-dust parallel-disk-usage diskus

bench: ## benchmark dfdu against peers: DIR ENTRIES WIDE SEED RUNS COLD
	$(CARGO) build --release --bin dfdu --bin dfdu-bench
	target/release/dfdu-bench gen --entries $(ENTRIES) $(if $(WIDE),--wide $(WIDE)) --seed $(SEED) $(DIR)
	target/release/dfdu-bench run --dir $(DIR) --runs $(RUNS) $(if $(COLD),--cold) --dfdu target/release/dfdu

clean: ## remove build output
	$(CARGO) clean
