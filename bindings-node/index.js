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
const { Semaphore, PermitGuard } = require('./lib/semaphore')
const { MAX_KEY_BYTES, MAX_RULES } = /** @type {typeof import('./native')} */ (require('./lib/native'))

module.exports = {
  Limiter,
  DistributedLock,
  Semaphore,
  PermitGuard,
  /** @deprecated the earlier name of `PermitGuard`. */
  Permit: PermitGuard,
  FairLock,
  ReadWriteLock,
  LeaseGuard,
  /** @deprecated the earlier name of `LeaseGuard`. */
  LeaseHold: LeaseGuard,
  /** The longest key, in bytes, any call accepts (64 KiB). */
  MAX_KEY_BYTES,
  /** The most rules one call checks together (100). */
  MAX_RULES,
  ...require('./lib/error-classes'),
}
