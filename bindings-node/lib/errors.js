'use strict'
// The error classes: one base `RatelockError` with a stable `code`, a subclass per kind. Native errors
// arrive as `[ERR_RATELOCK_...] message` and are turned into these by `rethrow`/`fromNative`.

class RatelockError extends Error {
  static code = 'ERR_RATELOCK'

  constructor(message, options) {
    super(message, options)
    this.name = new.target.name
    this.code = new.target.code
  }
}

const kinds = {}

function kind(name, code, base = RatelockError) {
  const Class = {
    [name]: class extends base {
      static code = code
    },
  }[name]
  kinds[code] = Class
  return Class
}

const InvalidRuleError = kind('InvalidRuleError', 'ERR_RATELOCK_INVALID_RULE')
const InvalidArgumentError = kind('InvalidArgumentError', 'ERR_RATELOCK_INVALID_ARGUMENT')
const CostExceedsCapacityError = kind('CostExceedsCapacityError', 'ERR_RATELOCK_COST_EXCEEDS_CAPACITY')
const StoreUnavailableError = kind('StoreUnavailableError', 'ERR_RATELOCK_STORE_UNAVAILABLE')
const StoreTimeoutError = kind('StoreTimeoutError', 'ERR_RATELOCK_TIMEOUT', StoreUnavailableError)
const WaitTimeoutError = kind('WaitTimeoutError', 'ERR_RATELOCK_WAIT_TIMEOUT')
const LockNotOwnedError = kind('LockNotOwnedError', 'ERR_RATELOCK_LOCK_NOT_OWNED')
const LockLostError = kind('LockLostError', 'ERR_RATELOCK_LOCK_LOST')
const ProtocolError = kind('ProtocolError', 'ERR_RATELOCK_PROTOCOL')
const ConfigurationError = kind('ConfigurationError', 'ERR_RATELOCK_CONFIGURATION')
const InternalError = kind('InternalError', 'ERR_RATELOCK_INTERNAL')

const CODED = /^\[(ERR_RATELOCK_[A-Z_]+)\] ([\s\S]*)$/

/** The typed error for an error thrown by the addon (anything else is returned unchanged). */
function fromNative(error) {
  const match = error instanceof Error && !(error instanceof RatelockError) ? CODED.exec(error.message) : null
  if (!match) return error
  const Class = kinds[match[1]]
  if (Class) return new Class(match[2])
  const unknown = new RatelockError(match[2])
  unknown.code = match[1]
  return unknown
}

/** A rejection handler: rethrows the typed error. */
function rethrow(error) {
  throw fromNative(error)
}

/** Invalid arguments caught in JavaScript, named like the addon names them. */
function invalidArgument(name, problem) {
  return new InvalidArgumentError(`invalid argument \`${name}\`: ${problem}`)
}

module.exports = {
  RatelockError,
  InvalidRuleError,
  InvalidArgumentError,
  CostExceedsCapacityError,
  StoreUnavailableError,
  StoreTimeoutError,
  WaitTimeoutError,
  LockNotOwnedError,
  LockLostError,
  ProtocolError,
  ConfigurationError,
  InternalError,
  fromNative,
  rethrow,
  invalidArgument,
}
