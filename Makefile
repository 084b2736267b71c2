# The commands the README names. `make demo` runs the demo on the embedded memory store;
# `make test` runs every check CI runs (formatting, lints, all tests, the package build).

CARGO ?= cargo

# Forgets the fingerprints of ratelock's own crates under target directory $(1), so the next build there
# compiles them again from the sources it is given (the dependencies' builds are kept).
forget-ratelock-builds = find $(1) -type d -path '*/.fingerprint/ratelock-*' -prune -exec rm -rf {} + 2>/dev/null || true

PYTHON ?= python3
VENV := .venv
TARGET_DIR := $(abspath $(or $(CARGO_TARGET_DIR),$(CURDIR)/target))
NPM := npm --no-audit --no-fund --loglevel=error

.PHONY: demo test test-deps lint unit-and-integration package-check python-env python-sdist-check python-test \
	node-env node-demo-env node-types-check node-test node-pack-check wasm wasm-test playground bench vectors-fill \
	fuzz fuzz-short faults module-build module-test module-suites dist dist-aarch64 install-test docs docs-test

demo: python-env node-demo-env
	@$(CARGO) run --quiet -p ratelock-examples --bin demo
	@echo
	@cd examples/python && ../../$(VENV)/bin/python flask_demo.py
	@echo
	@cd examples/node && node express_demo.js

# The Express example's packages and the addon (built from source).
node-demo-env:
	cd examples/node && $(NPM) install --ignore-scripts
	cd bindings-node && RATELOCK_BUILD_PROFILE=debug CARGO_TARGET_DIR=$(TARGET_DIR) node scripts/build.js

test: test-deps
	$(MAKE) lint unit-and-integration package-check python-sdist-check python-test node-types-check node-test \
	  node-pack-check wasm-test fuzz-short module-test install-test docs-test

# What the tests need beyond Rust, Python and Node (redis-server, Chromium, the wasm32 target...):
# installed when missing, or the exact command printed where it cannot be.
test-deps:
	bash scripts/install-test-deps.sh

lint:
	python3 scripts/versions.py check
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings
	$(CARGO) clippy -p ratelock --no-default-features --all-targets -- -D warnings
	$(CARGO) clippy -p ratelock --no-default-features --features runtime --all-targets -- -D warnings

# The Rust tests include the store's module path (tests/harness/tests/server_code.rs), on servers that
# load the module built here.
unit-and-integration: module-build
	$(CARGO) test --workspace
	$(MAKE) module-suites

# The vector, limiter and lock suites again, every test server loading the ratelock module, so that its
# commands serve every call the suites make. Chosen by name over the whole workspace rather than with
# `-p ratelock-testkit`: one package alone unifies other features, which would build the core and
# dozens of dependencies a second time (a minute on a cold cache).
module-suites: module-build
	RATELOCK_TESTS_LOAD_MODULE=1 $(CARGO) test --workspace --test vectors --test limiter --test locks \
	  --test semaphores --test lock_kinds --test lock_kinds_agree --test redlock

# The full fault suite (tests/faults/README.md): the Rust clients' scenarios under every fault, seed
# after seed for FAULTS_SECONDS, a table of every run; then every fuzz target for a minute. The short
# seeded form runs inside `make test` (the `faults` tests of the harness, Python and Node).
FAULTS_SECONDS ?= 720
faults: test-deps
	$(CARGO) run --release --quiet -p ratelock-testkit --bin faults -- $(FAULTS_SECONDS)
	bash fuzz/run.sh 60

# The Redis module (server-module/, its own workspace): formatted and linted, built, then its tests
# against redis-servers that load it (limit.lua and RATELOCK.LIMIT agree call for call; writes replicate
# as effects).
MODULE_TARGET := $(TARGET_DIR)/server-module
module-build:
	$(CARGO) build --quiet --manifest-path server-module/Cargo.toml --target-dir $(MODULE_TARGET)

module-test: module-build
	$(CARGO) fmt --manifest-path server-module/Cargo.toml -- --check
	$(CARGO) clippy --quiet --manifest-path server-module/Cargo.toml --target-dir $(MODULE_TARGET) --all-targets -- -D warnings
	$(CARGO) test --quiet --manifest-path server-module/Cargo.toml --target-dir $(MODULE_TARGET)

# Every fuzz target from its seeds (fuzz/seeds/), briefly in `make test`, longer on its own
# (`make fuzz FUZZ_SECONDS=300`). A crash fails it and leaves its input in fuzz/artifacts/.
FUZZ_SECONDS ?= 60
fuzz-short:
	bash fuzz/run.sh 10

fuzz:
	bash fuzz/run.sh $(FUZZ_SECONDS)

# Builds the crate from its packaged form: proves the Lua scripts travel inside it.
package-check:
	$(CARGO) package -p ratelock --allow-dirty --quiet
	files="$$($(CARGO) package -p ratelock --allow-dirty --list)"; \
	for script in core/lua/*.lua; do \
	  printf '%s\n' "$$files" | grep -qx "lua/$${script##*/}" || { echo "missing from the package: $$script"; exit 1; }; \
	done

# Builds and installs the Python package from source (`pip install .`) into .venv.
python-env:
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check pytest hypothesis mypy flask \
	  gunicorn uvicorn uwsgi celery redis fastapi starlette django django-stubs http-sf httpx \
	  opentelemetry-api opentelemetry-sdk
	$(VENV)/bin/pip install --quiet --disable-pip-version-check --force-reinstall --no-deps .

# An sdist must build a working wheel on its own (the Lua scripts travel inside it). The wheel is built
# in the dev profile: what is checked is that it builds and works (the released wheels come from
# scripts/dist.sh), and a dev build takes 53 s cold and 18 s warm here against 114 s and 50 s. Its copy
# of the core builds in a target directory of its own, and ratelock's own crates are always rebuilt there: the
# unpacked sources carry old timestamps and cargo names a path crate's artifacts by its path relative
# to the workspace, so kept fingerprints would pass a previous run's core off as fresh (a module added
# since then is then "not found"). Forgetting their fingerprints (`forget-ratelock-builds`) keeps the
# dependencies' builds.
SDIST_DIR := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)/sdist-check
python-sdist-check: python-env
	rm -rf $(SDIST_DIR) && mkdir -p $(SDIST_DIR)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check maturin
	$(VENV)/bin/maturin sdist --out $(SDIST_DIR) > /dev/null
	tar -tzf $(SDIST_DIR)/ratelock-*.tar.gz | grep -q '/core/lua/limit.lua$$'
	$(call forget-ratelock-builds,$(TARGET_DIR)/sdist-build)
	CARGO_TARGET_DIR=$(TARGET_DIR)/sdist-build MATURIN_PEP517_ARGS="--profile dev" \
	  $(VENV)/bin/pip wheel --quiet --no-deps --wheel-dir $(SDIST_DIR) $(SDIST_DIR)/ratelock-*.tar.gz
	$(PYTHON) -m venv $(SDIST_DIR)/venv
	$(SDIST_DIR)/venv/bin/pip install --quiet --disable-pip-version-check $(SDIST_DIR)/ratelock-*.whl
	cd $(SDIST_DIR) && venv/bin/python -c "import ratelock; assert ratelock.Limiter().hit('k', '1/second').allowed; print('wheel from sdist works')"

# Type checks, the stub against the built module, the example, and pytest.
python-test: python-env
	$(VENV)/bin/python -m mypy --strict examples/python bindings-python/python/ratelock tests/cross_language
	$(VENV)/bin/python -m mypy.stubtest ratelock._native
	$(VENV)/bin/python examples/python/quickstart.py > /dev/null
	cd tests/python && ../../$(VENV)/bin/python -m pytest

# The test-only npm packages (Express, TypeScript, the napi-rs CLI) and the addon, built from source.
node-env:
	cd tests/node && $(NPM) install --ignore-scripts
	cd bindings-node && RATELOCK_BUILD_PROFILE=debug CARGO_TARGET_DIR=$(TARGET_DIR) node scripts/build.js

# The committed native.d.ts must be what napi-rs generates from the crate now.
node-types-check: node-env
	rm -rf $(TARGET_DIR)/napi-dts && touch bindings-node/src/*.rs
	cd bindings-node && ../tests/node/node_modules/.bin/napi build --manifest-path Cargo.toml \
	  --package-json-path package.json -p ratelock-node --target-dir $(TARGET_DIR) \
	  -o $(TARGET_DIR)/napi-dts --dts native.d.ts > /dev/null
	diff -u bindings-node/native.d.ts $(TARGET_DIR)/napi-dts/native.d.ts || \
	  { echo "bindings-node/native.d.ts is stale: copy $(TARGET_DIR)/napi-dts/native.d.ts over it"; exit 1; }

# The type test (tsc on a typed example), the JavaScript checked as TypeScript, then node:test,
# including the cross-language test against the Python package in .venv.
node-test: node-env python-env node-demo-env wasm
	cd tests/node && node_modules/.bin/tsc -p tsconfig.json
	cd tests/node && node_modules/.bin/tsc -p tsconfig.check-js.json
	node --test --test-concurrency=1 tests/node/ tests/cross_language/

# `npm pack` must give a tarball that builds from source on its own and works. Its copy of the core
# builds in a target directory of its own: sharing one with the repository's core lets either copy's
# artifacts pass for the other's (same crate name and version), and a stale core gets linked. ratelock's
# own crates are always rebuilt there too: npm unpacks every file with one old timestamp.
PACK_DIR := $(TARGET_DIR)/npm-pack-check
node-pack-check: node-env
	rm -rf $(PACK_DIR) && mkdir -p $(PACK_DIR)/app
	$(call forget-ratelock-builds,$(TARGET_DIR)/pack-check)
	cd bindings-node && $(NPM) pack --pack-destination $(PACK_DIR) > /dev/null
	tar -tzf $(PACK_DIR)/ratelock-*.tgz | grep -q 'package/rust/core/lua/limit.lua$$'
	cd $(PACK_DIR)/app && echo '{"private": true}' > package.json && \
	  RATELOCK_BUILD_PROFILE=debug CARGO_TARGET_DIR=$(TARGET_DIR)/pack-check $(NPM) install --foreground-scripts ../ratelock-*.tgz > build.log 2>&1 || \
	  { tail -30 build.log; exit 1; }
	cd $(PACK_DIR)/app && node -e "require('ratelock').Limiter && new (require('ratelock').Limiter)().hit('k', '1/second').then((d) => { if (!d.allowed) process.exit(1); console.log('npm tarball builds and works') })"

# The WebAssembly package (bindings-wasm/pkg); fails loudly if the wasm32 target or wasm-bindgen-cli
# cannot be had on this machine.
wasm:
	CARGO_TARGET_DIR=$(TARGET_DIR) bindings-wasm/build.sh

# The vectors against the WebAssembly build under Node, then the playground in headless Chromium.
wasm-test: wasm
	$(CARGO) clippy -p ratelock-wasm --target wasm32-unknown-unknown -- -D warnings
	cd tests/wasm && $(NPM) install
	node --test --test-concurrency=1 tests/wasm/

# Serves the playground on 127.0.0.1 (PORT, default 8080).
playground: wasm
	node bindings-wasm/playground/serve.mjs $(or $(PORT),8080)

# Rust figures (vs redis-benchmark), Python figures (vs limits, throttled-py, Flask-Limiter, redis-py),
# then Node figures (vs rate-limiter-flexible, express-rate-limit + rate-limit-redis, redlock).
bench: test-deps
	$(CARGO) build --release --quiet --manifest-path server-module/Cargo.toml --target-dir $(MODULE_TARGET)
	RATELOCK_MODULE_SO=$(MODULE_TARGET)/release/libratelock_module.so \
	  REDIS_CELL_SO="$$(bash bench/peers/redis-cell.sh $(TARGET_DIR)/peers)" \
	  $(CARGO) run --release --quiet -p ratelock-bench
	test -x .venv-bench/bin/python || $(PYTHON) -m venv .venv-bench
	.venv-bench/bin/pip install --quiet --disable-pip-version-check -r bench/python/requirements.txt
	.venv-bench/bin/pip install --quiet --disable-pip-version-check --force-reinstall --no-deps .
	.venv-bench/bin/python bench/python/bench.py
	cd bench/node && $(NPM) install --ignore-scripts
	cd bindings-node && CARGO_TARGET_DIR=$(TARGET_DIR) node scripts/build.js
	CARGO_TARGET_DIR=$(TARGET_DIR) bindings-wasm/build.sh
	RATELOCK_MODULE_SO=$(MODULE_TARGET)/release/libratelock_module.so node bench/node/bench.js

# Every release artifact into dist/ (scripts/dist.sh: wheels, npm packages, the crate, the WASM package,
# the server module; dist/MANIFEST.md says what each is and how it was checked).
dist:
	bash scripts/dist.sh

# The aarch64 artifacts of dist/ run under qemu-user on an emulated arm64 Debian (root; minutes).
dist-aarch64: dist
	bash tests/install/aarch64.sh

# The x86_64 artifacts, installed as a user installs them with no Rust toolchain on the PATH, each
# serving its framework example against a real redis-server (tests/install/run.sh).
install-test: node-demo-env
	bash scripts/dist.sh x86_64
	bash tests/install/run.sh

# The documentation site into target/docs-site (scripts/build-docs.sh): the guide, the API references
# of every language, the playground.
docs: wasm
	bash scripts/build-docs.sh

# The built site: every link resolves, and headless Chromium renders the front page and the references.
docs-test: docs
	cd tests/docs && $(NPM) install
	node --test --test-concurrency=1 tests/docs/

# Recompute vector expectations from the Rust core (new scenarios only; review the diff).
vectors-fill:
	$(CARGO) run --quiet -p ratelock-testkit --bin vectors -- fill
