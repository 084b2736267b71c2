'use strict'
// A limiter decision as a plain object, built from the addon's numbers (the layout of
// `DECISION_FIELDS` in bindings-node/src/completions.rs) and the prepared rules that were checked.

/** Numbers per decision in the addon's answers. */
const FIELDS = 7

/** The decision whose numbers start at `values[at]`, with its rule described by `parsed`. */
function decision(values, at, parsed) {
  const ruleIndex = values[at + 6]
  return {
    allowed: values[at] === 1,
    limit: values[at + 1],
    remaining: values[at + 2],
    resetAfterMs: values[at + 3],
    retryAfterMs: values[at + 4],
    degraded: values[at + 5] === 1,
    rule: parsed.texts[ruleIndex],
    ruleIndex,
    periodMs: parsed.periodsMs[ruleIndex],
  }
}

module.exports = { FIELDS, decision }
