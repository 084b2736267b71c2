'use strict'
// `LeaseGuard`: one hold of a `FairLock` or of a `ReadWriteLock` (read or write), as each acquire
// resolves to it: its fencing token, the lost flag and AbortSignal, extension and release.

const check = require('./arguments')
const { LockLostError, LockNotOwnedError, StoreUnavailableError, fromNative, rethrow } = require('./errors')

/** One hold of a `FairLock` or of a `ReadWriteLock`; a lease, renewed while held (`autoRenew`). */
class LeaseGuard {
  #hold
  #what
  #ttlMs
  #given = false
  #controller = null

  /**
   * @param {object} hold the native guard
   * @param {string} what what is held, for messages (`'fair lock'`, `'read hold'`, `'write hold'`)
   * @param {number} ttlMs the lock's lease length, the default of `extend()`
   */
  constructor(hold, what, ttlMs) {
    this.#hold = hold
    this.#what = what
    this.#ttlMs = ttlMs
  }

  /**
   * The fencing token of this hold: higher than every earlier grant of the same lock (readers and
   * writers of a read-write lock draw from one counter). Send it with every write to the resource.
   * @returns {number}
   */
  get fencingToken() {
    return this.#hold.fencingToken
  }

  /**
   * True once the hold is known lost (a renewal found it gone, or the lease ran out).
   * @returns {boolean}
   */
  get lost() {
    return this.#hold.isLost()
  }

  /**
   * An AbortSignal that aborts with a `LockLostError` as soon as the hold is known lost (watched from
   * the first read of this property until the hold is released; the watch keeps no process alive).
   * @returns {AbortSignal}
   */
  get signal() {
    if (this.#controller === null) {
      const controller = new AbortController()
      this.#controller = controller
      this.#hold.onLost(() => controller.abort(new LockLostError(`the ${this.#what} was lost while held`)))
    }
    return this.#controller.signal
  }

  /**
   * Moves the end of the lease to `ttlMs` from now (default: the lock's ttl). Never re-takes a lost
   * hold: rejects with `LockLostError` if it is gone.
   * @param {{ ttlMs?: number }} [options]
   * @returns {Promise<void>}
   */
  async extend(options) {
    const ttlMs = check.optionalNumber('ttlMs', check.options('options', options).ttlMs) ?? this.#ttlMs
    if (this.#given) throw new LockNotOwnedError(`this ${this.#what} was already released`)
    const held = await this.#hold.extend(ttlMs).catch(rethrow)
    if (!held) throw new LockLostError(`cannot extend: the ${this.#what} is gone`)
  }

  /**
   * Gives the hold back. Rejects with `LockNotOwnedError` if it was released already, and with
   * `LockLostError` if it had been lost meanwhile.
   * @returns {Promise<void>}
   */
  async release() {
    if (this.#given) throw new LockNotOwnedError(`this ${this.#what} was already released`)
    this.#given = true
    const held = await this.#hold.release().catch((error) => {
      const typed = fromNative(error)
      // The store could not be reached: the hold is still ours, and release can be called again.
      if (typed instanceof StoreUnavailableError) this.#given = false
      throw typed
    })
    if (!held) throw new LockLostError(`the ${this.#what} was lost before release`)
  }

  /** For `using()`: the native guard. */
  get hold() {
    return this.#hold
  }
}

/**
 * The settings of a fair or read-write lock's constructor, type-checked (values are checked by the
 * addon).
 */
function leaseSettings(given) {
  return {
    url: check.optionalString('url', given.url),
    ttlMs: check.optionalNumber('ttlMs', given.ttlMs),
    waiterTtlMs: check.optionalNumber('waiterTtlMs', given.waiterTtlMs),
    autoRenew: check.optionalBoolean('autoRenew', given.autoRenew),
    prefix: check.optionalString('prefix', given.prefix),
    timeoutMs: check.optionalNumber('timeoutMs', given.timeoutMs),
  }
}

/** The wait limit of `acquire(options)`, type-checked. */
function waitLimit(options) {
  return check.optionalNumber('timeoutMs', check.options('options', options).timeoutMs)
}

module.exports = { LeaseGuard, leaseSettings, waitLimit }
