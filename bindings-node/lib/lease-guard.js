'use strict'
// `LeaseGuard`: a hold with a fencing token, as a `FairLock` or `ReadWriteLock` acquire resolves to it
// (and as a `DistributedLock` keeps its holds): a `Guard` with its token and an AbortSignal.

const { Guard, lostWhileHeld } = require('./guard')

/** One hold of a `FairLock` or of a `ReadWriteLock`; a lease, renewed while held (`autoRenew`). */
class LeaseGuard extends Guard {
  #controller = null

  /**
   * The fencing token of this hold: higher than every earlier grant of the same lock (readers and
   * writers of a read-write lock draw from one counter). Send it with every write to the resource.
   * @returns {number}
   */
  get fencingToken() {
    return this.hold.fencingToken
  }

  /**
   * An AbortSignal that aborts with a `LockLostError` as soon as the hold is known lost (watched from
   * the first read of this property until the hold is released; the watch keeps no process alive, and
   * no hold: one dropped without its release is still collected and given back).
   * @returns {AbortSignal}
   */
  get signal() {
    if (this.#controller === null) {
      const controller = new AbortController()
      this.#controller = controller
      // The watch holds neither this guard nor its native hold (only a weak reference): a hold dropped
      // without its release is still collected, warned of and given back. Closing over `this` kept it,
      // renewed, for good.
      const native = new WeakRef(this.hold)
      const what = this.hold.what
      this.hold.onLost(() => controller.abort(lostWhileHeld(native.deref() ?? { what, lostDescription: null })))
    }
    return this.#controller.signal
  }
}

module.exports = { LeaseGuard }
