'use strict'
// `Semaphore`: at most `permits` holders at once across every process on the same store and name.
// Each `acquire()` resolves to its own `Permit` (a lease, renewed while held).

const native = require('./native')
const check = require('./arguments')
const { LockLostError, LockNotOwnedError, StoreUnavailableError, fromNative, rethrow } = require('./errors')
const { Connection, whileHeld } = require('./holding')

/** One permit of a `Semaphore`. */
class Permit {
  #hold
  #ttlMs
  #given = false

  constructor(hold, ttlMs) {
    this.#hold = hold
    this.#ttlMs = ttlMs
  }

  /** True once the permit is known lost. */
  get lost() {
    return this.#hold.isLost()
  }

  /** Gives the permit back; rejects with `LockLostError` if it had been lost meanwhile. */
  async release() {
    if (this.#given) throw new LockNotOwnedError('this permit was already released')
    this.#given = true
    const held = await this.#hold.release().catch((error) => {
      const typed = fromNative(error)
      // The store could not be reached: the hold is still ours, and release can be called again.
      if (typed instanceof StoreUnavailableError) this.#given = false
      throw typed
    })
    if (!held) throw new LockLostError('the permit was lost before release')
  }

  /** Moves the end of the permit's lease to `ttlMs` from now (default: the semaphore's ttl). */
  async extend(options) {
    const ttlMs = check.optionalNumber('ttlMs', check.options('options', options).ttlMs) ?? this.#ttlMs
    if (this.#given) throw new LockNotOwnedError('this permit was already released')
    const held = await this.#hold.extend(ttlMs).catch(rethrow)
    if (!held) throw new LockLostError('cannot extend: the permit is gone')
  }

  /** For `using()`: the native guard. */
  get hold() {
    return this.#hold
  }
}

class Semaphore {
  #connection
  #ttlMs

  /**
   * @param {string | Buffer} name
   * @param {number} permits how many holders at once
   * @param {object} [options] `url` (none: the embedded memory store), `ttlMs` (30000), `autoRenew`
   *   (true), `prefix`, `timeoutMs` (each store call, 1000).
   */
  constructor(name, permits, options) {
    check.key('name', name)
    if (typeof permits !== 'number') throw check.notANumber('permits', permits)
    const given = check.options('options', options)
    const settings = {
      url: check.optionalString('url', given.url),
      ttlMs: check.optionalNumber('ttlMs', given.ttlMs),
      autoRenew: check.optionalBoolean('autoRenew', given.autoRenew),
      prefix: check.optionalString('prefix', given.prefix),
      timeoutMs: check.optionalNumber('timeoutMs', given.timeoutMs),
    }
    this.#ttlMs = settings.ttlMs ?? 30_000
    this.#connection = new Connection(() => native.connectSemaphore(name, permits, settings))
  }

  /** Takes a permit if one is free; resolves to it, or `null`. */
  async tryAcquire() {
    const hold = await (await this.#connection.get()).tryAcquire().catch(rethrow)
    return hold === null ? null : new Permit(hold, this.#ttlMs)
  }

  /** Waits up to `timeoutMs` (none: no limit) for a permit; rejects with `WaitTimeoutError`. */
  async acquire(options) {
    const timeoutMs = check.optionalNumber('timeoutMs', check.options('options', options).timeoutMs)
    const hold = await (await this.#connection.get()).acquire(timeoutMs).catch(rethrow)
    return new Permit(hold, this.#ttlMs)
  }

  /** Permits in use now. */
  async inUse() {
    return (await this.#connection.get()).inUse().catch(rethrow)
  }

  /**
   * Takes a permit (waiting up to `timeoutMs`), runs `work(signal)` and gives the permit back, even if
   * `work` throws; `signal` aborts with a `LockLostError` if the permit is lost meanwhile.
   */
  async using(work, options) {
    check.fn('work', work)
    const permit = await this.acquire(options)
    return whileHeld('permit', permit.hold, () => permit.release(), work)
  }
}

module.exports = { Semaphore, Permit }
