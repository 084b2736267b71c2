'use strict'
// The addon's errors into the error classes. The addon throws (or rejects with) errors whose `code`
// is the stable code (`ERR_RATELOCK_INVALID_RULE`) and hands failures settled in a batch over as
// `{ code, message }`; `fromNative` and `fromCode` make the class of that code (`error-classes.js`,
// re-exported here for the rest of lib/), as `invalidArgument` makes one for an argument checked in
// JavaScript.

const classes = require('./error-classes')

const { RatelockError, InvalidArgumentError } = classes

/** Each error class by its code. */
const byCode = new Map(Object.values(classes).map((Class) => [Class.code, Class]))

/** The typed error for the code and message the addon gave. */
function fromCode(code, message) {
  const Class = byCode.get(code)
  if (Class) return new Class(message)
  const unknown = new RatelockError(message)
  unknown.code = code
  return unknown
}

/**
 * The typed error for an error thrown by the addon (anything else is returned unchanged).
 * @template T
 * @param {T} error
 * @returns {T | InstanceType<typeof RatelockError>}
 */
function fromNative(error) {
  if (!(error instanceof Error) || error instanceof RatelockError) return error
  const code = /** @type {{ code?: unknown }} */ (error).code
  return typeof code === 'string' && code.startsWith(RatelockError.code) ? fromCode(code, error.message) : error
}

/** A rejection handler: rethrows the typed error. */
function rethrow(error) {
  throw fromNative(error)
}

/** Invalid arguments caught in JavaScript, named like the addon names them. */
function invalidArgument(name, problem) {
  return new InvalidArgumentError(`invalid argument \`${name}\`: ${problem}`)
}

module.exports = { ...classes, fromCode, fromNative, rethrow, invalidArgument }
