'use strict'
// The install script: nothing to do when npm installed the prebuilt addon of this platform (an optional
// dependency, `lib/platform.js`); otherwise builds the addon from source with the machine's cargo and
// puts it at ./ratelock.node. In the repository it builds the workspace crate `ratelock-node`; in a
// packed tarball, the sources that scripts/pack-sources.js copied into ./rust.
// RATELOCK_BUILD_FROM_SOURCE=1 builds even when a prebuilt addon is there; RATELOCK_BUILD_PROFILE=debug
// builds faster.

const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { prebuiltPackage } = require('../lib/platform')

const packageDir = path.resolve(__dirname, '..')
if (process.env.RATELOCK_BUILD_FROM_SOURCE !== '1' && prebuiltInstalled()) process.exit(0)
const packed = path.join(packageDir, 'rust', 'Cargo.toml')
const workspace = path.join(packageDir, '..', 'Cargo.toml')
const manifest = fs.existsSync(packed) ? packed : workspace
if (!fs.existsSync(manifest)) {
  fail(`no Rust sources found (looked for ${packed} and ${workspace})`)
}
const profile = process.env.RATELOCK_BUILD_PROFILE === 'debug' ? 'debug' : 'release'
const targetDir = process.env.CARGO_TARGET_DIR || path.join(path.dirname(manifest), 'target')

const args = ['build', '--manifest-path', manifest, '-p', 'ratelock-node']
if (profile === 'release') args.push('--release')
// The repository's Cargo.lock travels with the packed sources, so cargo starts from the versions that
// were tested (it only drops the entries of crates the small workspace does not have).
const built = spawnSync('cargo', args, { stdio: 'inherit', env: { ...process.env, CARGO_TARGET_DIR: targetDir } })
if (built.error) fail(`cannot run cargo (${built.error.message}); install Rust from https://rustup.rs`)
if (built.status !== 0) fail(`cargo build failed (exit ${built.status})`)

const library = { linux: 'libratelock_node.so', darwin: 'libratelock_node.dylib', win32: 'ratelock_node.dll' }[
  process.platform
]
if (!library) fail(`unsupported platform ${process.platform}`)
const source = path.join(targetDir, profile, library)
const destination = path.join(packageDir, 'ratelock.node')
// Copy to a fresh file and rename over the old one: a process that has the old addon loaded keeps it.
fs.copyFileSync(source, `${destination}.tmp`)
fs.renameSync(`${destination}.tmp`, destination)
console.log(`ratelock: built ${destination} (${profile})`)

/** Whether npm installed this platform's prebuilt addon (then nothing is built). */
function prebuiltInstalled() {
  const name = prebuiltPackage()
  if (name === null) return false
  try {
    require.resolve(name, { paths: [packageDir] })
    console.log(`ratelock: using the prebuilt addon ${name}`)
    return true
  } catch {
    return false
  }
}

function fail(message) {
  console.error(`ratelock: ${message}`)
  process.exit(1)
}
