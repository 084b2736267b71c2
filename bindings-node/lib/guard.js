'use strict'
// `Guard`: one hold of any lock kind over its native guard (`NativeGuard`): the lost flag, extension and
// release. Whether a hold was lost or given back already is the core's answer (the addon rejects with
// `LockLostError` or `LockNotOwnedError`); a release the store did not answer keeps the hold, so it can
// be called again. Also `using`, the body of every lock kind's `using()`.

const check = require('./arguments')
const { LockLostError, StoreUnavailableError, fromCode, fromNative, rethrow } = require('./errors')
const { LONGEST_TIMER_MS } = require('./timers')

/**
 * Warns of a hold collected before its release: its native guard then gives it back in the background,
 * at a moment the garbage collector chooses, while the caller may still think it holds (as Python's
 * `ResourceWarning` for a guard dropped while held).
 */
const collectedWhileHeld = new FinalizationRegistry((native) => {
  // A hold lost meanwhile had nothing left to give back.
  if (native.isLost()) return
  process.emitWarning(`a ${native.what} hold was garbage-collected before its release, and given back then: keep the ` +
    'hold until you release it (or use using())', { code: 'RATELOCK_HOLD_DROPPED' })
})

/** One hold of a lock kind; a lease, renewed while held (`autoRenew`). */
class Guard {
  #native

  /** @param {object} native the native guard */
  constructor(native) {
    this.#native = native
    collectedWhileHeld.register(this, native, this)
  }

  /**
   * True once the hold is known lost (a renewal found it gone, or the lease ran out).
   * @returns {boolean}
   */
  get lost() {
    return this.#native.isLost()
  }

  /**
   * Why the hold was lost: `'expired'` (its lease ran out without a renewal), `'taken'` (the store
   * said it is gone or held by another) or `'failed'` (a renewal was refused for good: `lostError`);
   * `null` while it is not lost.
   * @returns {'expired' | 'taken' | 'failed' | null}
   */
  get lostReason() {
    return this.#native.lostReason
  }

  /**
   * The typed error that refused the renewal when `lostReason` is `'failed'`, else `null`.
   * @returns {Error | null}
   */
  get lostError() {
    const failure = this.#native.lostError
    return failure === null ? null : fromCode(failure.code, failure.message)
  }

  /**
   * Moves the end of the lease to `ttlMs` from now (default: the lock's ttl). Never re-takes a lost
   * hold: rejects with `LockLostError` if it is gone, with `LockNotOwnedError` once released.
   * @param {{ ttlMs?: number }} [options]
   * @returns {Promise<void>}
   */
  async extend(options) {
    const ttlMs = check.optionalNumber('ttlMs', check.options('options', options, ['ttlMs']).ttlMs)
    await this.#native.extend(ttlMs).catch(rethrow)
  }

  /**
   * Gives the hold back: resolves `'released'`, or `'still_held'` when a re-entrant lock keeps other
   * holds. Rejects with `LockNotOwnedError` if it was released already, and with `LockLostError` if it
   * had been lost meanwhile (`lostReason` then says how).
   * @returns {Promise<'released' | 'still_held'>}
   */
  async release() {
    let released
    try {
      released = await this.#native.release()
    } catch (failure) {
      const error = fromNative(failure)
      // A store that could not be reached leaves the hold held (release can be called again).
      if (!(error instanceof StoreUnavailableError)) collectedWhileHeld.unregister(this)
      throw error
    }
    collectedWhileHeld.unregister(this)
    return released
  }

  /** The native guard (for `using()` and the kinds' own properties). */
  get hold() {
    return this.#native
  }
}

/** The reason a hold's signal aborts with: `native` (a native guard) was lost while held, and why. */
function lostWhileHeld(native) {
  const why = native.lostDescription
  return new LockLostError(`the ${native.what} was lost while held${why === null ? '' : ` (${why})`}`)
}

/**
 * Takes a hold with `acquire()`, runs `work(signal)` while it is held and gives it back with
 * `giveBack(hold)` (default: its `release()`), even when `work` throws. `signal` aborts with a
 * `LockLostError` as soon as the hold is known lost; the error of `work` wins over one from giving back.
 * Resolves to what `work` resolves to.
 * @param {(signal: AbortSignal) => any} work
 * @param {() => Promise<Guard>} acquire
 * @param {(hold: Guard) => Promise<unknown>} [giveBack]
 */
async function using(work, acquire, giveBack = (hold) => hold.release()) {
  check.fn('work', work)
  const hold = await acquire()
  const controller = new AbortController()
  let failed = false
  let failure
  let result
  // The process stays alive while the work runs (a work may only wait for the signal), and no longer:
  // the watch for a loss is weak. A pending watch kept it alive after the work until the lease's end
  // when the give-back failed (the lease then runs out).
  const alive = setInterval(() => {}, LONGEST_TIMER_MS)
  try {
    // Inside the `try`: a watch that cannot even start still gives the hold back.
    hold.hold.onLost(() => controller.abort(lostWhileHeld(hold.hold)))
    result = await work(controller.signal)
  } catch (error) {
    failed = true
    failure = error
  }
  clearInterval(alive)
  try {
    await giveBack(hold)
  } catch (error) {
    if (!failed) {
      failed = true
      failure = error
    } else {
      // The work's own error is what rejects; the failed release is not lost without a word.
      process.emitWarning(`the hold was not given back after the work failed (${error.name}: ${error.message})`, {
        code: 'RATELOCK_RELEASE_FAILED',
      })
    }
  }
  if (failed) throw failure
  return result
}

module.exports = { Guard, lostWhileHeld, using }
