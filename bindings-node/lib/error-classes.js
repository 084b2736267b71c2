'use strict'
// The error classes of the public API: one base `RatelockError` with a stable `code`, a subclass per
// kind. `errors.js` turns the addon's errors, whose `code` is one of these, into them.

class RatelockError extends Error {
  static code = 'ERR_RATELOCK'

  constructor(message, options) {
    super(message, options)
    this.name = new.target.name
    this.code = new.target.code
  }
}

/** A subclass of `base` named `name`, with the stable `code`. */
function kind(name, code, base = RatelockError) {
  return {
    [name]: class extends base {
      static code = code
    },
  }[name]
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

// One object literal of names: index.js spreads it, and Node reads the names from it for index.mjs.
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
}
