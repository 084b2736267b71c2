#!/usr/bin/env bash
# Builds the WebAssembly package into bindings-wasm/pkg: the core compiled for wasm32-unknown-unknown
# (no tokio, no redis), then wasm-bindgen's ESM glue (loadable by browsers, and by Node via node.mjs).
# Fails loudly when the wasm32 target or the wasm-bindgen CLI cannot be had on this machine.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(dirname "$here")"
target_dir="${CARGO_TARGET_DIR:-$root/target}"
version="$(sed -n 's/^wasm-bindgen = "=\(.*\)"$/\1/p' "$here/Cargo.toml")"
tools="${RATELOCK_TOOLS_DIR:-$HOME/.cache/ratelock}/wasm-bindgen-$version"

loud() {
  printf '\n*** WASM BUILD NOT POSSIBLE: %s ***\n\n' "$*" >&2
  exit 1
}

if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown ||
    loud "the wasm32-unknown-unknown target could not be fetched (rustup target add wasm32-unknown-unknown)"
fi
if [ ! -x "$tools/bin/wasm-bindgen" ]; then
  cargo install wasm-bindgen-cli --version "$version" --root "$tools" ||
    loud "wasm-bindgen-cli $version could not be installed from crates.io"
fi

cargo build --quiet -p ratelock-wasm --target wasm32-unknown-unknown --profile wasm --manifest-path "$root/Cargo.toml"
rm -rf "$here/pkg"
"$tools/bin/wasm-bindgen" --target web --out-dir "$here/pkg" \
  --remove-name-section --remove-producers-section "$target_dir/wasm32-unknown-unknown/wasm/ratelock_wasm.wasm"
echo "ratelock-wasm: built $here/pkg ($(gzip -9 -c "$here/pkg/ratelock_wasm_bg.wasm" | wc -c) bytes gzipped)"
