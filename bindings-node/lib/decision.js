'use strict'
// A limiter decision as a plain object, built from the addon's numbers and the prepared rules that were
// checked. The addon names the layout it writes (`decisionLayout()`, from src/decision_numbers.rs):
// each figure is read where the addon puts it, never by a position written here.

const native = require('./native')

const LAYOUT = native.decisionLayout()
const at = (name) => {
  const index = LAYOUT.indexOf(name)
  if (index < 0) throw new Error(`the addon's decision layout has no ${name}: ${LAYOUT.join(', ')}`)
  return index
}
const ALLOWED = at('allowed')
const LIMIT = at('limit')
const REMAINING = at('remaining')
const RESET_AFTER_MS = at('resetAfterMs')
const RETRY_AFTER_MS = at('retryAfterMs')
const DEGRADED = at('degraded')
const RULE_INDEX = at('ruleIndex')
const REASON = at('reason')
const WOULD_DENY = at('wouldDeny')
const CACHED = at('cached')
/** What decided, by the code the addon writes: 'rule', 'ban', 'deny_list' or 'allow_list'. */
const REASONS = native.reasonNames()

/** Numbers per decision in the addon's answers. */
const FIELDS = LAYOUT.length

/** The decision whose numbers start at `values[offset]`, with its rule described by `parsed`. */
function decision(values, offset, parsed) {
  const ruleIndex = values[offset + RULE_INDEX]
  return {
    allowed: values[offset + ALLOWED] === 1,
    limit: values[offset + LIMIT],
    remaining: values[offset + REMAINING],
    resetAfterMs: values[offset + RESET_AFTER_MS],
    retryAfterMs: values[offset + RETRY_AFTER_MS],
    degraded: values[offset + DEGRADED] === 1,
    rule: parsed.texts[ruleIndex],
    ruleIndex,
    periodMs: parsed.periodsMs[ruleIndex],
    reason: REASONS[values[offset + REASON]],
    wouldDeny: values[offset + WOULD_DENY] === 1,
    cached: values[offset + CACHED] === 1,
  }
}

module.exports = { FIELDS, decision }
