'use strict'
// `FairLock`: a lock handed out first come, first served across every process on the same store and
// name. Waiting acquires queue (the core keeps the queue and the order); each resolves to a `LeaseGuard`.

const native = require('./native')
const check = require('./arguments')
const { rethrow } = require('./errors')
const { Connection, whileHeld } = require('./holding')
const { LeaseGuard, leaseSettings, waitLimit } = require('./lease-guard')

const WHAT = 'fair lock'

class FairLock {
  #connection
  #ttlMs

  /**
   * @param {string | Buffer} name
   * @param {object} [options] `url` (none: the embedded memory store), `ttlMs` (each hold's lease,
   *   30000), `waiterTtlMs` (how long a dead waiter can hold up the queue, 5000), `autoRenew` (true),
   *   `prefix`, `timeoutMs` (each store call, 1000).
   */
  constructor(name, options) {
    check.key('name', name)
    const settings = leaseSettings(check.options('options', options))
    this.#ttlMs = settings.ttlMs ?? 30_000
    this.#connection = new Connection(() => native.connectFairLock(name, settings))
  }

  /**
   * Takes the lock if it is free and nobody is waiting (never queues, never cuts in).
   * @returns {Promise<LeaseGuard | null>}
   */
  async tryAcquire() {
    const hold = await (await this.#connection.get()).tryAcquire().catch(rethrow)
    return hold === null ? null : new LeaseGuard(hold, WHAT, this.#ttlMs)
  }

  /**
   * Queues and waits up to `timeoutMs` (none: no limit) for its turn; rejects with `WaitTimeoutError`
   * (and leaves the queue) when the time passes.
   * @param {{ timeoutMs?: number }} [options]
   * @returns {Promise<LeaseGuard>}
   */
  async acquire(options) {
    const timeoutMs = waitLimit(options)
    const hold = await (await this.#connection.get()).acquire(timeoutMs).catch(rethrow)
    return new LeaseGuard(hold, WHAT, this.#ttlMs)
  }

  /**
   * The lock as it stands: `held`, `remainingMs`, `holderFence`, `lastFence`, `waiting`.
   * @returns {Promise<{ held: boolean, remainingMs: number, holderFence: number, lastFence: number, waiting: number }>}
   */
  async state() {
    return (await this.#connection.get()).state().catch(rethrow)
  }

  /**
   * Whether anyone holds the lock now.
   * @returns {Promise<boolean>}
   */
  async isLocked() {
    return (await this.#connection.get()).isLocked().catch(rethrow)
  }

  /**
   * Acquires (waiting in line up to `timeoutMs`), runs `work(signal)` and releases, even if `work`
   * throws. `signal` aborts with a `LockLostError` as soon as the hold is known lost.
   * @template T
   * @param {(signal: AbortSignal) => Promise<T> | T} work
   * @param {{ timeoutMs?: number }} [options]
   * @returns {Promise<T>}
   */
  async using(work, options) {
    check.fn('work', work)
    const hold = await this.acquire(options)
    return whileHeld(WHAT, hold.hold, () => hold.release(), work)
  }
}

module.exports = { FairLock }
