'use strict'
// Which prebuilt addon package fits this process: `ratelock-<os>-<cpu>[-<libc>]`, as `make dist` builds
// them (scripts/dist.sh) and the `ratelock` package lists them under `optionalDependencies`, so npm
// installs only the one whose `os`, `cpu` and `libc` match.

/** Platforms with a prebuilt package, by `platformName()`. */
const PREBUILT = ['linux-x64-gnu', 'linux-x64-musl', 'linux-arm64-gnu']

/** `gnu` or `musl` on Linux (from the runtime's own report), `null` elsewhere. */
function libc() {
  if (process.platform !== 'linux') return null
  const report = /** @type {{ header?: { glibcVersionRuntime?: string } } | undefined} */ (process.report?.getReport?.())
  return report?.header?.glibcVersionRuntime ? 'gnu' : 'musl'
}

/** This process's platform as package names spell it, e.g. `linux-x64-gnu`. */
function platformName() {
  const family = libc()
  return `${process.platform}-${process.arch}${family ? `-${family}` : ''}`
}

/** The prebuilt addon package for this platform, or `null` when `make dist` builds none. */
function prebuiltPackage() {
  const name = platformName()
  return PREBUILT.includes(name) ? `ratelock-${name}` : null
}

module.exports = { PREBUILT, platformName, prebuiltPackage }
