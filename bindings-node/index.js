'use strict'
// ratelock for Node: rate limiting and distributed locks on Redis (or in memory), sharing keys and
// semantics with the Rust and Python packages. Express middleware: require('ratelock/express').

const errors = require('./lib/errors')
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
  RatelockError: errors.RatelockError,
  InvalidRuleError: errors.InvalidRuleError,
  InvalidArgumentError: errors.InvalidArgumentError,
  CostExceedsCapacityError: errors.CostExceedsCapacityError,
  StoreUnavailableError: errors.StoreUnavailableError,
  StoreTimeoutError: errors.StoreTimeoutError,
  WaitTimeoutError: errors.WaitTimeoutError,
  LockNotOwnedError: errors.LockNotOwnedError,
  LockLostError: errors.LockLostError,
  ProtocolError: errors.ProtocolError,
  ConfigurationError: errors.ConfigurationError,
  InternalError: errors.InternalError,
}
