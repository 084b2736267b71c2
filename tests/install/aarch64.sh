#!/usr/bin/env bash
# The aarch64 artifacts of dist/ run on an emulated aarch64 Debian (qemu-user through binfmt_misc, in a
# debootstrap of bookworm arm64 with python3, nodejs and redis-server): the manylinux wheel installed
# into a venv there hits a limit on this machine's redis-server; the arm64 npm package loads under the
# arm64 node; the module loads into the arm64 redis-server and answers RATELOCK.LIMIT. Run by hand or
# by `make dist-aarch64` (not in `make test`: the debootstrap and the emulation take minutes).
# Needs root (debootstrap, chroot, binfmt_misc): apt-get install qemu-user-static binfmt-support debootstrap.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
rootfs="${RATELOCK_ARM64_ROOT:-$root/target/arm64-root}"
version="$(python3 "$root/scripts/versions.py")"

mountpoint -q /proc/sys/fs/binfmt_misc || mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
if [ ! -x "$rootfs/usr/bin/python3" ] || [ ! -x "$rootfs/usr/bin/redis-server" ]; then
  debootstrap --arch=arm64 --variant=minbase --include=python3,python3-venv,redis-server,nodejs bookworm "$rootfs" \
    http://deb.debian.org/debian > "$root/target/arm64-debootstrap.log"
fi
in_arm64() { chroot "$rootfs" "$@"; }
echo "aarch64: $(in_arm64 uname -m), $(in_arm64 python3 --version), node $(in_arm64 node --version), $(in_arm64 redis-server --version | cut -d' ' -f1-3)"

work="$rootfs/opt/ratelock-check"
rm -rf "$work" && mkdir -p "$work"
wheel="$(basename "$(ls "$root"/dist/python/ratelock-"$version"-*manylinux*aarch64*.whl)")"
cp "$root/dist/python/$wheel" "$work/"
cp "$root/dist/node/ratelock-$version.tgz" "$root/dist/node/ratelock-linux-arm64-gnu-$version.tgz" "$work/"
cp "$root/dist/module/libratelock_module-$version-linux-aarch64.so" "$work/module.so"

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no >/dev/null &
host_redis=$!
arm_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
in_arm64 redis-server --port "$arm_port" --bind 127.0.0.1 --save '' --appendonly no --ignore-warnings ARM64-COW-BUG --loadmodule /opt/ratelock-check/module.so \
  > "$root/target/arm64-redis.log" 2>&1 &
arm_redis=$!
trap 'kill $host_redis $arm_redis 2>/dev/null || true' EXIT

# The wheel: pip's own platform check accepts it (its tag), it imports, and it decides on Redis.
in_arm64 python3 -m venv /opt/ratelock-check/venv
in_arm64 /opt/ratelock-check/venv/bin/pip install --quiet --no-index "/opt/ratelock-check/$wheel"
in_arm64 /opt/ratelock-check/venv/bin/python -c "
import ratelock
limiter = ratelock.Limiter('redis://127.0.0.1:$port/0')
seen = [limiter.hit('arm64', '2/minute').allowed for _ in range(3)]
assert seen == [True, True, False], seen
print('aarch64 wheel: ratelock', ratelock.__version__, 'on Redis:', seen)"

# The npm package: the loader picks ratelock-linux-arm64-gnu under the arm64 node.
mkdir -p "$work/app/node_modules/ratelock" "$work/app/node_modules/ratelock-linux-arm64-gnu"
tar -xzf "$work/ratelock-$version.tgz" -C "$work/app/node_modules/ratelock" --strip-components=1
tar -xzf "$work/ratelock-linux-arm64-gnu-$version.tgz" -C "$work/app/node_modules/ratelock-linux-arm64-gnu" --strip-components=1
in_arm64 sh -c "cd /opt/ratelock-check/app && node -e \"
const { Limiter } = require('ratelock')
const limiter = new Limiter({ url: 'redis://127.0.0.1:$port/1' })
Promise.all([1, 2, 3].map(() => limiter.hit('arm64', '2/minute'))).then((ds) => {
  const seen = ds.map((d) => d.allowed)
  if (seen.join() !== 'true,true,false') { console.error(seen); process.exit(1) }
  console.log('aarch64 npm package:', require.resolve('ratelock-linux-arm64-gnu'), 'on Redis:', seen.join())
  process.exit(0)
})\""

# The module: loaded by the arm64 redis-server, it answers the version and one limit call.
for _ in $(seq 200); do redis-cli -p "$arm_port" ping >/dev/null 2>&1 && break; sleep 0.1; done
echo "aarch64 module: RATELOCK.VERSION $(redis-cli -p "$arm_port" RATELOCK.VERSION | tr '\n' ' ')"
redis-cli -p "$arm_port" RATELOCK.LIMIT 1 'rl:{arm64}:g2/60000' hit '' 1 g 2 60000000 2 tag | tr '\n' ' '
echo
echo "aarch64: every artifact ran under qemu-user"
{
  echo "## aarch64 under qemu-user (tests/install/aarch64.sh)"
  echo
  echo "On an emulated Debian bookworm arm64 (debootstrap, qemu-aarch64-static through binfmt_misc): the"
  echo "manylinux aarch64 wheel installed into a venv and decided on Redis; \`ratelock\` with"
  echo "\`ratelock-linux-arm64-gnu\` loaded under node $(in_arm64 node --version) and decided on Redis; the aarch64"
  echo "module loaded into the arm64 redis-server and answered RATELOCK.VERSION and RATELOCK.LIMIT. The musl"
  echo "artifacts are checked by their platform tags only (Debian has no musl CPython or Node)."
  echo
} >> "$root/dist/MANIFEST.md"
