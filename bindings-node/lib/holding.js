'use strict'
// What `DistributedLock` and `Semaphore` share: connecting on first use, and `using()`, which runs a
// function while a hold is kept and hands it an AbortSignal that aborts when the hold is lost.

const { LockLostError, fromNative } = require('./errors')

/** Connects `open()` once; the promise is forgotten on failure so a later call tries again. */
class Connection {
  #open
  #native = null
  #connecting = null

  constructor(open) {
    this.#open = open
  }

  get native() {
    return this.#native
  }

  get() {
    if (this.#native !== null) return Promise.resolve(this.#native)
    this.#connecting ??= this.#open().then(
      (handle) => {
        this.#native = handle
        return handle
      },
      (error) => {
        this.#connecting = null
        throw fromNative(error)
      },
    )
    return this.#connecting
  }
}

/**
 * Runs `work(signal)` while `hold` (a native guard) is held and gives it back with `giveBack()`,
 * even when `work` throws. `signal` aborts with a `LockLostError` as soon as the hold is known lost;
 * the error of `work` wins over one from giving back.
 */
async function whileHeld(what, hold, giveBack, work) {
  const controller = new AbortController()
  hold.waitLost().then(
    (lost) => {
      if (lost) controller.abort(new LockLostError(`the ${what} was lost while held`))
    },
    () => {},
  )
  let failed = false
  let failure
  let result
  try {
    result = await work(controller.signal)
  } catch (error) {
    failed = true
    failure = error
  }
  try {
    await giveBack()
  } catch (error) {
    if (!failed) {
      failed = true
      failure = error
    }
  }
  if (failed) throw failure
  return result
}

module.exports = { Connection, whileHeld }
