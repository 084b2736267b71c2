'use strict'
// Test harness for the ratelock Redis module: where its built library is, and how many times a
// server ran each command (INFO commandstats), to show which code served the calls: the module's
// RATELOCK.LIMIT or limit.lua by EVALSHA.

const fs = require('node:fs')
const path = require('node:path')

/**
 * The module's library: RATELOCK_MODULE_SO, else what `make module-build` leaves under the target
 * directory (CARGO_TARGET_DIR, else the repository's target/). Throws, saying how to build it, when
 * it is missing: a test that needs it never silently passes without it.
 */
function modulePath() {
  const target = process.env.CARGO_TARGET_DIR || path.join(__dirname, '..', '..', 'target')
  const library =
    process.env.RATELOCK_MODULE_SO || path.join(target, 'server-module', 'debug', 'libratelock_module.so')
  if (!fs.existsSync(library)) {
    throw new Error(`the ratelock module is not built at ${library}: run \`make module-build\` (or set RATELOCK_MODULE_SO)`)
  }
  return library
}

/**
 * How many times `server` ran each command since it started (or since CONFIG RESETSTAT), by name in
 * lower case (the server keeps a module command's own case: RATELOCK.LIMIT).
 */
async function commandCalls(server) {
  const stats = await server.command('INFO', 'commandstats')
  const calls = {}
  for (const line of stats.split(/\r?\n/)) {
    const found = /^cmdstat_([^:]+):calls=(\d+)/.exec(line)
    if (found) calls[found[1].toLowerCase()] = Number(found[2])
  }
  return calls
}

module.exports = { modulePath, commandCalls }
