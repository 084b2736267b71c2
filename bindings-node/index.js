'use strict'
// ratelock for Node: rate limiting and distributed locks on Redis (or in memory), sharing keys and
// semantics with the Rust and Python packages. Express middleware: require('ratelock/express').
// index.mjs re-exports these names for `import`; keep this one object literal of names (and the
// spread of the error classes) so that Node can read them without running the module.

const { Limiter } = require('./lib/limiter')
const { DistributedLock } = require('./lib/lock')
const { FairLock } = require('./lib/fair-lock')
const { LeaseGuard } = require('./lib/lease-guard')
const { ReadWriteLock } = require('./lib/read-write-lock')
const { Semaphore, Permit } = require('./lib/semaphore')

module.exports = {
  Limiter,
  DistributedLock,
  Semaphore,
  Permit,
  FairLock,
  ReadWriteLock,
  LeaseGuard,
  /** @deprecated the earlier name of `LeaseGuard`. */
  LeaseHold: LeaseGuard,
  ...require('./lib/error-classes'),
}
