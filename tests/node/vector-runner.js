'use strict'
// The shared vectors (tests/vectors/*.json) as Node calls: every scenario, and one scenario run step by
// step on a limiter for a store URL (memory when none), with explicit time converted to milliseconds
// at the edge. Used by vectors.test.js and by the module suite (module.test.js).

const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { randomUUID } = require('node:crypto')

const ratelock = require('../../bindings-node')

const VECTORS = path.join(__dirname, '..', 'vectors')
const ERRORS = {
  INVALID_RULE: ratelock.InvalidRuleError,
  INVALID_ARGUMENT: ratelock.InvalidArgumentError,
  COST_EXCEEDS_CAPACITY: ratelock.CostExceedsCapacityError,
}

/** Every scenario of every vector file, in a stable order, named `<file>/<scenario>`. */
function vectorScenarios() {
  const files = fs.readdirSync(VECTORS).filter((name) => name.endsWith('.json')).sort()
  return files.flatMap((file) => {
    const { scenarios } = JSON.parse(fs.readFileSync(path.join(VECTORS, file), 'utf8'))
    return scenarios.map((scenario) => ({ name: `${file}/${scenario.name}`, scenario }))
  })
}

/** Runs `scenario` on a fresh limiter for `url` (undefined: the memory store), asserting every step. */
async function runScenario(url, scenario) {
  const limiter = new ratelock.Limiter({ url, prefix: `v${randomUUID().slice(0, 12)}` })
  for (const [index, step] of scenario.steps.entries()) {
    const key = step.key ?? scenario.key ?? 'k'
    const rules = step.rules ?? scenario.rules
    const where = `step ${index} (${step.op} at ${step.now_us})`
    if (step.op === 'reset') {
      await limiter.reset(key, rules)
      continue
    }
    if (!['hit', 'peek', 'refund', 'reserve'].includes(step.op)) {
      await changeEntry(limiter, key, step, where)
      continue
    }
    const options = { cost: step.cost ?? 1, nowMs: step.now_us / 1000 }
    if (step.op === 'reserve') options.maxWaitMs = step.max_wait_us / 1000
    const call = limiter[step.op](key, rules, options)
    if (step.expect_error) {
      await assert.rejects(call, ERRORS[step.expect_error], where)
      continue
    }
    const decision = await call
    const got = {
      allowed: decision.allowed,
      limit: decision.limit,
      remaining: decision.remaining,
      reset_after_us: Math.round(decision.resetAfterMs * 1000),
      retry_after_us: Math.round(decision.retryAfterMs * 1000),
      rule_index: decision.ruleIndex,
      reason: decision.reason,
      would_deny: decision.wouldDeny,
    }
    const absent = { reason: 'rule', would_deny: false }
    const want = Object.fromEntries(Object.keys(got).map((name) => [name, step.expect[name] ?? absent[name]]))
    assert.deepEqual(got, want, where)
  }
}

/** `block`, `deny` or `allow` (for `for_us`), `unblock` or `clear`, through the limiter's methods. */
async function changeEntry(limiter, key, step, where) {
  const options = { nowMs: step.now_us / 1000 }
  const change =
    step.op === 'set_override'
      ? limiter.setOverride(key, step.override_rules, options)
      : step.op === 'clear_override'
        ? limiter.clearOverride(key)
        : ['block', 'deny', 'allow'].includes(step.op)
          ? limiter[step.op](key, step.for_us / 1000, options)
          : limiter[step.op](key, options)
  if (step.expect_error) {
    await assert.rejects(change, ERRORS[step.expect_error], where)
    return
  }
  const changed = await change
  if (step.expect_changed !== undefined) assert.equal(changed, step.expect_changed, where)
}

module.exports = { vectorScenarios, runScenario }
