#!/usr/bin/env bash
# `make docs`: builds the documentation site into target/docs-site: the guide and the Python API
# (MkDocs + mkdocstrings, in .venv-docs), the Rust API (rustdoc), the Node API (TypeDoc) and the
# WebAssembly playground (bindings-wasm, built by `make wasm` first). Prints the time it took.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)
site=target/docs-site
target_dir="${CARGO_TARGET_DIR:-$PWD/target}"

test -x .venv-docs/bin/python || python3 -m venv .venv-docs
.venv-docs/bin/pip install --quiet --disable-pip-version-check -r docs/tools/requirements.txt
(cd docs/tools && npm install --no-audit --no-fund --loglevel=error --ignore-scripts > /dev/null)

rm -rf "$site"
# mkdocstrings reads the Python package from its sources and stubs (no build needed).
PYTHONPATH=bindings-python/python NO_MKDOCS_2_WARNING=1 .venv-docs/bin/mkdocs build --quiet

# Every intra-doc link must resolve: a broken one fails the build.
RUSTDOCFLAGS="-D warnings" cargo doc --quiet -p ratelock --no-deps
mkdir -p "$site/reference/rust"
cp -r "$target_dir/doc/." "$site/reference/rust/"
# rustdoc links its pages' "help" and "settings" back to the doc root: give it an index there.
cat > "$site/reference/rust/index.html" <<'HTML'
<!doctype html><meta charset="utf-8"><title>ratelock: Rust API</title>
<meta http-equiv="refresh" content="0; url=ratelock/index.html"><a href="ratelock/index.html">ratelock</a>
HTML

(cd docs/tools && node_modules/.bin/typedoc --options typedoc.json --logLevel Warn --treatWarningsAsErrors)

mkdir -p "$site/playground" "$site/pkg"
cp bindings-wasm/playground/*.html bindings-wasm/playground/*.js bindings-wasm/playground/*.css "$site/playground/"
cp bindings-wasm/pkg/ratelock_wasm.js bindings-wasm/pkg/ratelock_wasm_bg.wasm "$site/pkg/"

echo "docs: built $site in $(( $(date +%s) - started )) s"
