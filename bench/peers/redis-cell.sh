#!/usr/bin/env bash
# Builds redis-cell 0.2.2 (a native GCRA module, `CL.THROTTLE`), the peer the server-cost rows of
# `make bench` measure beside ratelock's module: cargo fetches the crate from crates.io, it is built
# from a copy in $1 (its own target there), and the .so's path is printed. Nothing of it is committed.
set -euo pipefail
out="$1"
mkdir -p "$out/fetch/src"
cd "$out/fetch"
printf '[package]\nname = "fetch-redis-cell"\nversion = "0.0.0"\nedition = "2021"\n\n[dependencies]\nredis-cell = "=0.2.2"\n\n[workspace]\n' > Cargo.toml
touch src/lib.rs
cargo fetch --quiet
source_dir="$(cargo metadata --format-version 1 --quiet | python3 -c 'import json, sys; print(next(p["manifest_path"] for p in json.load(sys.stdin)["packages"] if p["name"] == "redis-cell").rsplit("/", 1)[0])')"
rm -rf "$out/redis-cell" && cp -r "$source_dir" "$out/redis-cell"
cd "$out/redis-cell"
# Its own workspace: under the repository's target directory, cargo would take it for a member of ours.
printf '\n[workspace]\n' >> Cargo.toml
cargo build --release --quiet --target-dir "$out/target" 2>/dev/null
echo "$out/target/release/libredis_cell.so"
