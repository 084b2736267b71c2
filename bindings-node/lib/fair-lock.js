'use strict'
// `FairLock`: a lock handed out first come, first served across every process on the same store and
// name. Waiting acquires queue (the core keeps the queue and the order); each resolves to a `LeaseGuard`.

const native = require('./native')
const check = require('./arguments')
const { using } = require('./guard')
const { LeaseGuard } = require('./lease-guard')
const { LockHandle, LOCK_OPTIONS } = require('./lock-handle')

class FairLock {
  #handle

  /**
   * @param {string | Buffer} name
   * @param {object} [options] `url` (none: the embedded memory store), `ttlMs` (each hold's lease,
   *   30000), `waiterTtlMs` (how long a dead waiter can hold up the queue, 5000), `autoRenew` (true),
   *   `prefix`, `timeoutMs` (each store call, 1000),
   *   and the store options `tlsRootCa`, `tlsClientCert`, `tlsClientKey`, `sentinelUsername`,
   *   `sentinelPassword`, `maxKeys`, `whenFull` (see
   *   `Limiter`).
   */
  constructor(name, options) {
    check.key('name', name)
    const checks = { ...LOCK_OPTIONS, waiterTtlMs: check.optionalNumber }
    this.#handle = new LockHandle(options, checks, (settings) => native.connectFairLock(name, settings), LeaseGuard)
  }

  /**
   * Takes the lock if it is free and nobody is waiting (never queues, never cuts in).
   * @returns {Promise<LeaseGuard | null>}
   */
  async tryAcquire() {
    return this.#handle.tryAcquire('tryAcquire')
  }

  /**
   * Queues and waits up to `timeoutMs` (none: no limit) for its turn; rejects with `WaitTimeoutError`
   * (and leaves the queue) when the time passes.
   * @param {{ timeoutMs?: number }} [options]
   * @returns {Promise<LeaseGuard>}
   */
  async acquire(options) {
    return this.#handle.acquire('acquire', options)
  }

  /**
   * The lock as it stands: `held`, `remainingMs`, `holderFence`, `lastFence`, `waiting`.
   * @returns {Promise<{ held: boolean, remainingMs: number, holderFence: number, lastFence: number, waiting: number }>}
   */
  async state() {
    return this.#handle.call('state')
  }

  /**
   * Whether anyone holds the lock now.
   * @returns {Promise<boolean>}
   */
  async isLocked() {
    return this.#handle.call('isLocked')
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
    return using(work, () => this.acquire(options))
  }
}

module.exports = { FairLock }
