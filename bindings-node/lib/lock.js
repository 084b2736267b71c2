'use strict'
// `DistributedLock`: a lock shared by every process (in any language) that uses the same store and
// name, with fencing tokens, lease renewal while held and a lost-lock signal. The work is done by the
// Rust core; this file keeps this instance's holds (the latest is the one released and extended;
// `using` gives back the very hold it took).

const native = require('./native')
const check = require('./arguments')
const { LockLostError, LockNotOwnedError, StoreUnavailableError } = require('./errors')
const { using } = require('./guard')
const { LeaseGuard } = require('./lease-guard')
const { LockHandle, LOCK_OPTIONS } = require('./lock-handle')

class DistributedLock {
  #handle
  /** @type {LeaseGuard[]} */
  #holds = []
  /** The hold whose release found it lost, until the next hold is taken: what `lostReason` tells of. */
  #foundLost = null

  /**
   * @param {string | Buffer} name
   * @param {object} [options] `url` (none: the embedded memory store), `ttlMs` (30000), `autoRenew`
   *   (true), `reentrant` (false), `prefix`, `timeoutMs` (each store call, 1000),
   *   and the store options `tlsRootCa`, `tlsClientCert`, `tlsClientKey`, `sentinelUsername`,
   *   `sentinelPassword`, `maxKeys`, `whenFull` (see
   *   `Limiter`).
   */
  constructor(name, options) {
    check.key('name', name)
    const checks = { ...LOCK_OPTIONS, reentrant: check.optionalBoolean }
    this.#handle = new LockHandle(options, checks, (settings) => native.connectLock(name, settings), LeaseGuard)
  }

  /** Takes the lock if it is free; resolves `true` if taken, `false` if someone else holds it. */
  async tryAcquire() {
    const hold = await this.#handle.tryAcquire('tryAcquire')
    if (hold === null) return false
    this.#keep(hold)
    return true
  }

  /**
   * Waits up to `timeoutMs` (none: no limit) for the lock; resolves to the hold's fencing token,
   * rejects with `WaitTimeoutError` when the time passes.
   */
  async acquire(options) {
    const hold = await this.#handle.acquire('acquire', options)
    this.#keep(hold)
    return hold.fencingToken
  }

  /**
   * Gives back this instance's latest hold: resolves `'released'`, or `'still_held'` when a re-entrant
   * lock keeps other holds. Rejects with `LockNotOwnedError` if it holds none, and with
   * `LockLostError` if the hold had been lost (nothing is changed then; `lostReason` says how).
   */
  async release() {
    return this.#giveBack(this.#latest())
  }

  /** Gives back `hold`, one of this instance's holds, taking it off them. */
  async #giveBack(hold) {
    const at = hold === undefined ? -1 : this.#holds.lastIndexOf(hold)
    if (at === -1) throw new LockNotOwnedError('release of a lock this instance does not hold')
    this.#holds.splice(at, 1)
    return hold.release().catch((error) => {
      // The store could not be reached: the hold is still ours, where it was, and release can be
      // called again.
      if (error instanceof StoreUnavailableError) this.#holds.splice(Math.min(at, this.#holds.length), 0, hold)
      // Lost, whatever the release's error says (a renewal refused for good rejects with its own):
      // `lost`, `lostReason` and `lostError` still tell of it.
      else if (error instanceof LockLostError || hold.lost) this.#foundLost = hold
      throw error
    })
  }

  /**
   * Moves the end of the latest hold's lease to `ttlMs` from now (default: the lock's ttl). Never
   * re-acquires: rejects with `LockLostError` if the hold expired or was taken.
   */
  async extend(options) {
    const hold = this.#latest()
    if (hold === undefined) throw new LockNotOwnedError('this instance holds no lock')
    await hold.extend(options)
  }

  /**
   * Acquires (waiting up to `timeoutMs`), runs `work(signal)` while the lease is kept, and releases,
   * even if `work` throws. `signal` aborts with a `LockLostError` as soon as the lock is known lost;
   * stop touching the protected resource then. Resolves to what `work` resolves to. It gives back the
   * hold it took, even when other callers share this instance.
   */
  async using(work, options) {
    // The hold this call took is the one it gives back, whatever other callers of this instance
    // took or gave back meanwhile.
    const acquire = async () => {
      const hold = await this.#handle.acquire('acquire', options)
      this.#keep(hold)
      return hold
    }
    return using(work, acquire, (hold) => this.#giveBack(hold))
  }

  /** The fencing token of this instance's latest hold, `null` when it holds none. */
  get fencingToken() {
    return this.#latest()?.fencingToken ?? null
  }

  /** True once the latest hold is known lost (also after its release rejected with `LockLostError`). */
  get lost() {
    return this.#lastKnown()?.lost ?? false
  }

  /**
   * Why the latest hold was lost (see `Guard.lostReason`), also after its release rejected with
   * `LockLostError`; `null` while it is not, or with no hold.
   */
  get lostReason() {
    return this.#lastKnown()?.lostReason ?? null
  }

  /** The error that refused the latest hold's renewal when `lostReason` is `'failed'`, else `null`. */
  get lostError() {
    return this.#lastKnown()?.lostError ?? null
  }

  /** Whether anyone holds the lock now. */
  async isLocked() {
    return this.#handle.call('isLocked')
  }

  /** Milliseconds left on the current lease (whoever holds it), `null` when free. */
  async remainingTtlMs() {
    return this.#handle.call('remainingTtlMs')
  }

  /** Deletes the lease whoever holds it (an operator's tool); resolves `true` if it was held. */
  async forceRelease() {
    return this.#handle.call('forceRelease')
  }

  /** This instance's owner token, once connected (`null` before). */
  get ownerToken() {
    return this.#handle.native?.ownerToken ?? null
  }

  #latest() {
    return this.#holds[this.#holds.length - 1]
  }

  /** The latest hold, or with none the one whose release found it lost. */
  #lastKnown() {
    return this.#latest() ?? this.#foundLost
  }

  #keep(hold) {
    this.#holds.push(hold)
    this.#foundLost = null
  }
}

module.exports = { DistributedLock }
