'use strict'
// Native errors into the error classes: the addon throws `[ERR_RATELOCK_...] message`, and
// `rethrow`/`fromNative` turn it into the class of that code (`error-classes.js`, re-exported here for
// the rest of lib/), as `invalidArgument` makes one for an argument checked in JavaScript.

const classes = require('./error-classes')

const { RatelockError, InvalidArgumentError } = classes

/** Each error class by its code. */
const byCode = new Map(Object.values(classes).map((Class) => [Class.code, Class]))

const CODED = /^\[(ERR_RATELOCK_[A-Z_]+)\] ([\s\S]*)$/

/** The typed error for an error thrown by the addon (anything else is returned unchanged). */
function fromNative(error) {
  const match = error instanceof Error && !(error instanceof RatelockError) ? CODED.exec(error.message) : null
  if (!match) return error
  const Class = byCode.get(match[1])
  if (Class) return new Class(match[2])
  const unknown = new RatelockError(match[2])
  unknown.code = match[1]
  return unknown
}

/** A rejection handler: rethrows the typed error. */
function rethrow(error) {
  throw fromNative(error)
}

/** Invalid arguments caught in JavaScript, named like the addon names them. */
function invalidArgument(name, problem) {
  return new InvalidArgumentError(`invalid argument \`${name}\`: ${problem}`)
}

module.exports = { ...classes, fromNative, rethrow, invalidArgument }
