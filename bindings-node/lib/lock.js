'use strict'
// `DistributedLock`: a lock shared by every process (in any language) that uses the same store and
// name, with fencing tokens, lease renewal while held and a lost-lock signal. The work is done by the
// Rust core; this file keeps this instance's holds and throws the typed errors.

const native = require('./native')
const check = require('./arguments')
const { LockLostError, LockNotOwnedError, StoreUnavailableError, fromNative, rethrow } = require('./errors')
const { Connection, whileHeld } = require('./holding')

const LOST_OUTCOMES = { not_held: 'not held', held_by_other: 'held by another owner', expired: 'expired' }

class DistributedLock {
  #connection
  #ttlMs
  #holds = []

  /**
   * @param {string | Buffer} name
   * @param {object} [options] `url` (none: the embedded memory store), `ttlMs` (30000), `autoRenew`
   *   (true), `reentrant` (false), `prefix`, `timeoutMs` (each store call, 1000).
   */
  constructor(name, options) {
    check.key('name', name)
    const given = check.options('options', options)
    const settings = {
      url: check.optionalString('url', given.url),
      ttlMs: check.optionalNumber('ttlMs', given.ttlMs),
      autoRenew: check.optionalBoolean('autoRenew', given.autoRenew),
      reentrant: check.optionalBoolean('reentrant', given.reentrant),
      prefix: check.optionalString('prefix', given.prefix),
      timeoutMs: check.optionalNumber('timeoutMs', given.timeoutMs),
    }
    this.#ttlMs = settings.ttlMs ?? 30_000
    this.#connection = new Connection(() => native.connectLock(name, settings))
  }

  /** Takes the lock if it is free; resolves `true` if taken, `false` if someone else holds it. */
  async tryAcquire() {
    const handle = await this.#connection.get()
    const hold = await handle.tryAcquire().catch(rethrow)
    if (hold === null) return false
    this.#holds.push(hold)
    return true
  }

  /**
   * Waits up to `timeoutMs` (none: no limit) for the lock; resolves to the hold's fencing token,
   * rejects with `WaitTimeoutError` when the time passes.
   */
  async acquire(options) {
    const timeoutMs = check.optionalNumber('timeoutMs', check.options('options', options).timeoutMs)
    const handle = await this.#connection.get()
    const hold = await handle.acquire(timeoutMs).catch(rethrow)
    this.#holds.push(hold)
    return hold.fencingToken
  }

  /**
   * Gives back this instance's latest hold. Rejects with `LockNotOwnedError` if it holds none, and
   * with `LockLostError` if the hold had been lost (nothing is changed then).
   */
  async release() {
    const hold = this.#holds.pop()
    if (hold === undefined) throw new LockNotOwnedError('release of a lock this instance does not hold')
    const outcome = await hold.release().catch((error) => {
      const typed = fromNative(error)
      // The store could not be reached: the hold is still ours, and release can be called again.
      if (typed instanceof StoreUnavailableError) this.#holds.push(hold)
      throw typed
    })
    if (outcome in LOST_OUTCOMES) {
      throw new LockLostError(`the lock was lost before release (${LOST_OUTCOMES[outcome]})`)
    }
  }

  /**
   * Moves the end of the latest hold's lease to `ttlMs` from now (default: the lock's ttl). Never
   * re-acquires: rejects with `LockLostError` if the hold expired or was taken.
   */
  async extend(options) {
    const ttlMs = check.optionalNumber('ttlMs', check.options('options', options).ttlMs) ?? this.#ttlMs
    const outcome = await this.#current().extend(ttlMs).catch(rethrow)
    if (outcome !== 'extended') throw new LockLostError(`cannot extend: the lock ${LOST_OUTCOMES[outcome]}`)
  }

  /**
   * Acquires (waiting up to `timeoutMs`), runs `work(signal)` while the lease is kept, and releases,
   * even if `work` throws. `signal` aborts with a `LockLostError` as soon as the lock is known lost;
   * stop touching the protected resource then. Resolves to what `work` resolves to.
   */
  async using(work, options) {
    check.fn('work', work)
    await this.acquire(options)
    const hold = this.#holds[this.#holds.length - 1]
    return whileHeld('lock', hold, () => this.release(), work)
  }

  /** The fencing token of this instance's latest hold, `null` when it holds none. */
  get fencingToken() {
    const hold = this.#holds[this.#holds.length - 1]
    return hold === undefined ? null : hold.fencingToken
  }

  /** True once the latest hold is known lost. */
  get lost() {
    const hold = this.#holds[this.#holds.length - 1]
    return hold !== undefined && hold.isLost()
  }

  /** Whether anyone holds the lock now. */
  async isLocked() {
    return (await this.#connection.get()).isLocked().catch(rethrow)
  }

  /** Milliseconds left on the current lease (whoever holds it), `null` when free. */
  async remainingTtlMs() {
    return (await this.#connection.get()).remainingTtlMs().catch(rethrow)
  }

  /** Deletes the lease whoever holds it (an operator's tool); resolves `true` if it was held. */
  async forceRelease() {
    return (await this.#connection.get()).forceRelease().catch(rethrow)
  }

  /** This instance's owner token, once connected (`null` before). */
  get ownerToken() {
    return this.#connection.native?.ownerToken ?? null
  }

  #current() {
    const hold = this.#holds[this.#holds.length - 1]
    if (hold === undefined) throw new LockNotOwnedError('this instance holds no lock')
    return hold
  }
}

module.exports = { DistributedLock }
