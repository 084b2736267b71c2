'use strict'
// Before `npm pack`/`npm publish`: copies the Rust sources the addon is built from (the core crate,
// its Lua scripts and this crate) into ./rust as a small workspace of their own, with the repository's
// Cargo.lock, so the tarball builds on a machine that has only cargo. `--clean` removes ./rust again.

const fs = require('node:fs')
const path = require('node:path')

const packageDir = path.resolve(__dirname, '..')
const repository = path.resolve(packageDir, '..')
const out = path.join(packageDir, 'rust')

fs.rmSync(out, { recursive: true, force: true })
if (process.argv.includes('--clean')) process.exit(0)

copy(path.join(repository, 'core', 'Cargo.toml'), path.join(out, 'core', 'Cargo.toml'))
copyTree(path.join(repository, 'core', 'src'), path.join(out, 'core', 'src'))
copyTree(path.join(repository, 'core', 'lua'), path.join(out, 'core', 'lua'))
copy(path.join(repository, 'README.md'), path.join(out, 'README.md'))
for (const file of ['Cargo.toml', 'build.rs']) copy(path.join(packageDir, file), path.join(out, 'node', file))
copyTree(path.join(packageDir, 'src'), path.join(out, 'node', 'src'))
copy(path.join(repository, 'Cargo.lock'), path.join(out, 'Cargo.lock'))

// The repository's workspace manifest, with only the two crates as members.
const root = fs.readFileSync(path.join(repository, 'Cargo.toml'), 'utf8')
const manifest = root
  .replace(/^members = \[.*\]$/m, 'members = ["core", "node"]')
  .replace(/^default-members = \[.*\]$/m, 'default-members = ["node"]')
  .replace(/^ratelock-testkit = .*\n/m, '')
fs.writeFileSync(path.join(out, 'Cargo.toml'), `# Written by scripts/pack-sources.js for the npm package.\n${manifest}`)
console.log(`ratelock: Rust sources copied to ${out}`)

function copy(from, to) {
  fs.mkdirSync(path.dirname(to), { recursive: true })
  fs.copyFileSync(from, to)
}

function copyTree(from, to) {
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    const source = path.join(from, entry.name)
    const target = path.join(to, entry.name)
    if (entry.isDirectory()) copyTree(source, target)
    else copy(fs.realpathSync(source), target)
  }
}
