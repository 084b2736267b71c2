'use strict'
// What every timer of the package shares: Node's longest delay.

/** The longest delay Node's timers take (2^31 - 1 ms, about 24.8 days): a longer one fires after 1 ms. */
const LONGEST_TIMER_MS = 2 ** 31 - 1

module.exports = { LONGEST_TIMER_MS }
