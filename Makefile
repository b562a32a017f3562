# dfdu — thin, self-documenting Makefile. `make help` lists the targets.
CARGO    ?= cargo
DIR      ?= $(HOME)/dfdu-bench/tree-1m
ENTRIES  ?= 1000000
WIDE     ?=
SEED     ?= 1
RUNS     ?= 10
COLD     ?=
TOOLS    ?=
PREFIX   ?= /usr/local
BINDIR   ?= $(PREFIX)/bin
MANDIR   ?= $(PREFIX)/share/man
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR  ?= $(PREFIX)/share/zsh/vendor-completions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
DESTDIR  ?=
# The binary `make install` copies (tests/install_kit.rs gives it the debug build).
DFDU_BIN ?= target/release/dfdu
MUSL_X86 := x86_64-unknown-linux-musl
MUSL_ARM := aarch64-unknown-linux-musl
CROSS    := aarch64-apple-darwin x86_64-apple-darwin x86_64-pc-windows-gnu
# make static: a nightly toolchain rebuilds std for size, with panics that abort at once
# (no panic message machinery, no unwinder, no backtrace printer), no unwind tables and no
# position-independent code. docs/platforms.md "Static binary" has what each part costs.
NIGHTLY  ?= nightly
BUILD_STD := -Z build-std=std,panic_abort
STATIC_FLAGS := -Zunstable-options -Cpanic=immediate-abort -Cforce-unwind-tables=no \
  -Crelocation-model=static -Zlocation-detail=none

.PHONY: help build release install install-du-link uninstall static static-stable test-static test-static-du test test-du test-gnu test-windows lint check-targets bench bench-deps clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | expand -t 18

build: ## debug build
	$(CARGO) build

release: ## optimised build: target/release/dfdu
	$(CARGO) build --release --bin dfdu

install: ## install dfdu, its man page and bash/zsh/fish completions under $(DESTDIR)$(PREFIX) (PREFIX=/usr/local); builds dfdu if missing
	test -x $(DFDU_BIN) || $(CARGO) build --release --bin dfdu
	install -d "$(DESTDIR)$(BINDIR)" "$(DESTDIR)$(MANDIR)/man1" "$(DESTDIR)$(BASHCOMPDIR)" \
	  "$(DESTDIR)$(ZSHCOMPDIR)" "$(DESTDIR)$(FISHCOMPDIR)"
	install -m 755 $(DFDU_BIN) "$(DESTDIR)$(BINDIR)/dfdu"
	install -m 644 man/dfdu.1 "$(DESTDIR)$(MANDIR)/man1/dfdu.1"
	install -m 644 completions/dfdu.bash "$(DESTDIR)$(BASHCOMPDIR)/dfdu"
	install -m 644 completions/_dfdu "$(DESTDIR)$(ZSHCOMPDIR)/_dfdu"
	install -m 644 completions/dfdu.fish "$(DESTDIR)$(FISHCOMPDIR)/dfdu.fish"

install-du-link: install ## also make `du` in $(BINDIR) a link to dfdu (it then *is* du)
	ln -sf dfdu "$(DESTDIR)$(BINDIR)/du"

uninstall: ## remove what install put there (and the du link, if it points at dfdu)
	if [ "$$(readlink "$(DESTDIR)$(BINDIR)/du")" = dfdu ]; then rm -f "$(DESTDIR)$(BINDIR)/du"; fi
	rm -f "$(DESTDIR)$(BINDIR)/dfdu" "$(DESTDIR)$(MANDIR)/man1/dfdu.1" "$(DESTDIR)$(BASHCOMPDIR)/dfdu" \
	  "$(DESTDIR)$(ZSHCOMPDIR)/_dfdu" "$(DESTDIR)$(FISHCOMPDIR)/dfdu.fish"

static: ## static musl binaries for x86_64 and aarch64 (nightly, std rebuilt for size), with their sizes
	rustup toolchain install $(NIGHTLY) --profile minimal --component rust-src
	rustup +$(NIGHTLY) target add $(MUSL_X86) $(MUSL_ARM)
	RUSTFLAGS="$(STATIC_FLAGS)" rustup run $(NIGHTLY) cargo build $(BUILD_STD) --profile static --bin dfdu --target $(MUSL_X86)
	CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld RUSTFLAGS="$(STATIC_FLAGS)" \
	  rustup run $(NIGHTLY) cargo build $(BUILD_STD) --profile static --bin dfdu --target $(MUSL_ARM)
	@for t in $(MUSL_X86) $(MUSL_ARM); do \
	  printf '%s: %s bytes\n' target/$$t/static/dfdu "$$(wc -c < target/$$t/static/dfdu)"; done

static-stable: ## the same with the stable toolchain and std as shipped (bigger: docs/platforms.md)
	rustup target add $(MUSL_X86) $(MUSL_ARM) >/dev/null 2>&1 || rustup target add $(MUSL_X86) $(MUSL_ARM)
	$(CARGO) build --profile static --bin dfdu --target $(MUSL_X86)
	CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=rust-lld \
	  $(CARGO) build --profile static --bin dfdu --target $(MUSL_ARM)
	@for t in $(MUSL_X86) $(MUSL_ARM); do \
	  printf '%s: %s bytes\n' target/$$t/static/dfdu "$$(wc -c < target/$$t/static/dfdu)"; done

test-static: static ## du_compat and GNU's tests/du against the static x86_64 binary
	DFDU_UNDER_TEST=$(CURDIR)/target/$(MUSL_X86)/static/dfdu $(CARGO) test --release --test du_compat
	DFDU=$(CURDIR)/target/$(MUSL_X86)/static/dfdu CARGO=$(CARGO) tests/gnu/run

# The binary users copy is the one tested: the stable toolchain builds it on any machine
# (a musl build once printed other local times than the glibc one; `make static` builds
# the same code with the nightly toolchain).
test-static-du: ## du_compat against the static x86_64 musl binary, built with the stable toolchain
	rustup target add $(MUSL_X86) >/dev/null 2>&1 || rustup target add $(MUSL_X86)
	$(CARGO) build --profile static --bin dfdu --target $(MUSL_X86)
	DFDU_UNDER_TEST=$(CURDIR)/target/$(MUSL_X86)/static/dfdu $(CARGO) test --release --test du_compat

test: lint check-targets ## everything a developer runs: format, lints, other targets, all tests (tests/machine-state checks they left the machine as it was)
	tests/machine-state -- $(MAKE) --no-print-directory test-steps

# The steps of `make test`, run inside tests/machine-state: it records /tmp, /dev/null and
# the mount table first and fails the run when the steps left them changed.
.PHONY: test-steps
test-steps:
	$(CARGO) test --release --workspace
	$(MAKE) --no-print-directory test-static-du
	CARGO=$(CARGO) tests/wine/run
	CARGO=$(CARGO) tests/gnu/run

test-gnu: ## GNU coreutils' own tests/du (fetched from Debian) against GNU du and dfdu
	CARGO=$(CARGO) tests/gnu/run

test-windows: ## cross-build dfdu.exe, run it and its platform tests under Wine, compare with Linux du
	CARGO=$(CARGO) tests/wine/run

lint: ## rustfmt and clippy (warnings are errors), product and benchmark harness
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

check-targets: ## clippy -D warnings for macOS (both) and Windows, the whole product package (no link)
	rustup target add $(CROSS) >/dev/null
	for target in $(CROSS); do $(CARGO) clippy --package dfdu --target $$target -- -D warnings || exit 1; done

bench-deps: ## install the peer tools the benchmark compares against
	apt-get install -y gdu ncdu hyperfine time
	$(CARGO) install --locked dua-cli du-dust parallel-disk-usage diskus

bench: ## cargo xtask bench: DIR=~/dfdu-bench/tree-1m ENTRIES WIDE SEED RUNS COLD=1 TOOLS=dfdu,du
	$(CARGO) xtask bench $(if $(WIDE),--wide $(WIDE),--entries $(ENTRIES)) --seed $(SEED) --runs $(RUNS) \
	  $(if $(COLD),--cold) $(if $(TOOLS),--tools $(TOOLS)) "$(DIR)"

clean: ## remove build output
	$(CARGO) clean

# ---- mutation testing (docs/testing.md "Mutation testing") ------------------------------
# One module at a time, with the few tests that exercise it: a whole run is hours on two cores.
# MOD picks the files to mutate and the test subset: `-C` arguments go to every cargo call
# (so only the targets the subset needs are built), those after `--` to the test harness.
MOD ?= ncdu
MUTANTS_JOBS ?= 1
# SHARD=1/4 runs every fourth mutant only (a sample, for a quick look).
SHARD ?=
# RE='write_failed|fts_root' runs only the mutants whose names match (after a fix). It
# reaches the recipe through the environment, so names with quotes (Run<'_, W>) survive.
RE ?=
export RE
# A run with RE or SLOW writes beside the whole module's run instead of over it.
MUTANTS_OUT = target/mutants-out/$(MOD)$(if $(RE),-re)$(if $(SLOW),-slow)
# SLOW=1 runs a module's longer test set where it has one (MUTANTS_TESTS_MOD_slow): for
# du, the big directories, tmpfs, out-of-range times, the streaming order, the -s
# folding tests and the unit tests of records.rs; for dupes, a file over 1 GiB
# deduplicated in two calls (on btrfs); meant with RE= for what the quick set let through.
SLOW ?=
# du builds the binary and du_compat, the others only the unit tests: two warm build
# directories, so du can run beside another module.
MUTANTS_FILES_ncdu   := src/tree/ncdu/mod.rs src/tree/ncdu/export.rs src/tree/ncdu/import.rs
MUTANTS_TESTS_ncdu   := -C --bin -C dfdu -- tree::ncdu::
MUTANTS_FILES_du     := src/du/mod.rs src/du/records.rs
MUTANTS_DU_QUICK    := files0_from_retries directory_moved options_alone depth_and_threshold operands exclude files0_from times links unreadable_as_nobody write_error bind_mount_loop
MUTANTS_TESTS_du     := -C --test -C du_compat -C --test -C stress -- -- $(MUTANTS_DU_QUICK)
MUTANTS_TESTS_du_slow := -C --test -C du_compat -C --test -C stress -C --bin -C dfdu -- -- $(MUTANTS_DU_QUICK) big_dir_10k_boundary big_dir_12k big_dir_100k big_dir_110k tmpfs_one_file_system time_out_of_range streaming_order summary_with summary_of du::records
MUTANTS_FILES_delete := src/browse/delete.rs
MUTANTS_TESTS_delete := -C --bin -C dfdu -- browse::
MUTANTS_FILES_arena  := src/tree/arena/mod.rs src/tree/arena/change.rs src/tree/arena/chunked.rs src/tree/sink.rs
MUTANTS_TESTS_arena  := -C --bin -C dfdu -- tree::
MUTANTS_FILES_report := src/report/mod.rs
MUTANTS_TESTS_report := -C --bin -C dfdu -- report::
MUTANTS_FILES_dupes  := $(wildcard src/dupes/*.rs)
MUTANTS_TESTS_dupes  := -C --bin -C dfdu -C --test -C dupes -C --test -C dedupe -- -- dupes hashfile damaged dedupe
MUTANTS_TESTS_dupes_slow := -C --bin -C dfdu -C --test -C dupes -C --test -C dedupe -- -- dupes hashfile damaged dedupe big_file_takes_two_calls

.PHONY: mutants mutants-list
mutants: ## cargo mutants over one module, MOD=ncdu|du|delete|arena|report|dupes; results in target/mutants-out/MOD[-re][-slow]
	@test -n "$(MUTANTS_FILES_$(MOD))" || { echo "unknown MOD=$(MOD)"; exit 2; }
	@test -z "$(SLOW)" || test -n "$(MUTANTS_TESTS_$(MOD)_slow)" || { echo "MOD=$(MOD) has no SLOW set"; exit 2; }
	mkdir -p $(MUTANTS_OUT)
	CARGO_TARGET_DIR=$(CURDIR)/target/mutants-$(if $(filter du,$(MOD)),du,bin)-target nice -n 5 $(CARGO) mutants -j $(MUTANTS_JOBS) \
	  $(foreach f,$(MUTANTS_FILES_$(MOD)),-f $(f)) -o $(MUTANTS_OUT) \
	  $(if $(SHARD),--shard $(SHARD) --sharding round-robin) $${RE:+--re "$$RE"} $(MUTANTS_TESTS_$(MOD)$(if $(SLOW),_slow)) \
	  || true
	@mutants/score $(MUTANTS_OUT)/mutants.out $(MOD)
	@mutants/unlisted $(MUTANTS_OUT)/mutants.out/missed.txt | sed '1s/^/not in mutants\/equivalent.txt:\n/'

# Bugs written by hand (mutants/hand/README): each diff applied to a copy of the tree in
# target/mutants-hand/, the module's test set run on it; MOD=delete (or several, quoted)
# picks modules, no MOD runs them all.
.PHONY: mutants-hand
mutants-hand: ## plant each hand-written bug of mutants/hand/ (MOD=delete|du|...) and run its module's tests: caught/planted
	mutants/hand/run $(if $(filter command line environment,$(origin MOD)),$(MOD))

mutants-list: ## list the mutants of MOD without running them
	$(CARGO) mutants $(foreach f,$(MUTANTS_FILES_$(MOD)),-f $(f)) --list
