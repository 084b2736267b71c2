#!/usr/bin/env bash
# Installs the x86_64 artifacts of dist/ (`scripts/dist.sh x86_64` or `make dist`) the way a user does,
# with no Rust toolchain on the PATH: the manylinux wheel into a fresh venv, which then serves the Flask
# example; the npm tarballs into an empty project, which then serves the Express example. Each example
# answers /search 3×200 then 429 against a real redis-server on a free loopback port (stopped by PID).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
work="${CARGO_TARGET_DIR:-$root/target}/install-test"
python="$(python3 -c 'import sys; print(sys.executable)')"
wheel="$(ls "$root"/dist/python/ratelock-*-manylinux*_x86_64*.whl)"
addon="$(ls "$root"/dist/node/ratelock-linux-x64-gnu-*.tgz)"
main="$(ls "$root"/dist/node/ratelock-[0-9]*.tgz)"
rm -rf "$work" && mkdir -p "$work"

# A PATH with Python, Node and the system, and no cargo or rustc.
export PATH="$(dirname "$python"):$(dirname "$(command -v node)"):/usr/local/bin:/usr/bin:/bin"
unset CARGO_HOME RUSTUP_HOME CARGO_TARGET_DIR
if command -v cargo >/dev/null || command -v rustc >/dev/null; then
  echo "install test: a Rust toolchain is still on the PATH ($PATH)" >&2
  exit 1
fi

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >/dev/null &
redis_pid=$!
app_pid=""
cleanup() {
  [ -n "$app_pid" ] && kill "$app_pid" 2>/dev/null || true
  kill "$redis_pid" 2>/dev/null || true
}
trap cleanup EXIT
export REDIS_URL="redis://127.0.0.1:$port/0"

# Serves `$@` on APP_PORT in the background and checks /search: 200, 200, 200, 429.
serve_and_check() {
  local name="$1"; shift
  APP_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
  PORT="$APP_PORT" "$@" >"$work/$name.log" 2>&1 &
  app_pid=$!
  node - "$APP_PORT" "$name" <<'JS'
const [port, name] = process.argv.slice(2)
const base = `http://127.0.0.1:${port}`
const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
;(async () => {
  for (let i = 0; i < 300; i++) {
    try { if ((await fetch(`${base}/health`)).ok) break } catch { await wait(50) }
  }
  const statuses = []
  for (let i = 0; i < 4; i++) statuses.push((await fetch(`${base}/search`)).status)
  if (statuses.join() !== '200,200,200,429') {
    console.error(`install test: ${name} answered ${statuses}`)
    process.exit(1)
  }
  console.log(`install test: ${name}: /search answered ${statuses}`)
})()
JS
  kill "$app_pid"; wait "$app_pid" 2>/dev/null || true; app_pid=""
}

# Python: a fresh venv, the wheel only as a wheel (never built from source), Flask from PyPI.
"$python" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --only-binary=ratelock "$wheel" flask
"$work/venv/bin/python" -c 'import ratelock, sys; assert ratelock.Limiter().hit("k", "1/second").allowed; print("install test: ratelock", ratelock.__version__, "from", ratelock.__file__)'
(cd "$root/examples/python" && serve_and_check "the Flask example from the wheel" "$work/venv/bin/python" flask_app.py)

# Node: an empty project, the two tarballs and Express; the install script must find the prebuilt addon.
mkdir -p "$work/app"
cd "$work/app"
echo '{ "private": true }' > package.json
npm install --no-audit --no-fund --loglevel=error --foreground-scripts "$addon" "$main" express@5 > "$work/npm-install.log" 2>&1 ||
  { cat "$work/npm-install.log"; exit 1; }
grep -q "using the prebuilt addon ratelock-linux-x64-gnu" "$work/npm-install.log" ||
  { echo "install test: the ratelock package did not use its prebuilt addon:"; cat "$work/npm-install.log"; exit 1; }
test ! -e node_modules/ratelock/ratelock.node || { echo "install test: the addon was built from source"; exit 1; }
cp "$root/examples/node/express_app.js" .
# Another db: the Flask example already spent the limit of /search on this client, as one shared limit.
export REDIS_URL="redis://127.0.0.1:$port/1"
serve_and_check "the Express example from the npm tarballs" node express_app.js
echo "install test: passed with no Rust toolchain on the PATH"
