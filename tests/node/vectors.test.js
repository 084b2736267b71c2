'use strict'
// The shared vectors (tests/vectors/*.json) through the Node API, on both stores, with explicit time:
// the same decisions as the Rust core and the Lua scripts, converted to milliseconds at the edge.

const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { randomUUID } = require('node:crypto')
const { after, before, describe, test } = require('node:test')

const ratelock = require('../../bindings-node')
const { RedisServer } = require('./redis-server')

const VECTORS = path.join(__dirname, '..', 'vectors')
const ERRORS = {
  INVALID_RULE: ratelock.InvalidRuleError,
  INVALID_ARGUMENT: ratelock.InvalidArgumentError,
  COST_EXCEEDS_CAPACITY: ratelock.CostExceedsCapacityError,
}

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

const files = fs.readdirSync(VECTORS).filter((name) => name.endsWith('.json')).sort()

for (const store of ['memory', 'redis']) {
  describe(`vectors on the ${store} store`, () => {
    for (const file of files) {
      const { scenarios } = JSON.parse(fs.readFileSync(path.join(VECTORS, file), 'utf8'))
      for (const scenario of scenarios) {
        test(`${file}/${scenario.name}`, () => run(store, scenario))
      }
    }
  })
}

async function run(store, scenario) {
  const url = store === 'redis' ? redis.url : undefined
  const limiter = new ratelock.Limiter({ url, prefix: `v${randomUUID().slice(0, 12)}` })
  for (const [index, step] of scenario.steps.entries()) {
    const key = step.key ?? scenario.key ?? 'k'
    const rules = step.rules ?? scenario.rules
    const where = `step ${index} (${step.op} at ${step.now_us})`
    if (step.op === 'reset') {
      await limiter.reset(key, rules)
      continue
    }
    const options = { cost: step.cost ?? 1, nowMs: step.now_us / 1000 }
    const call = step.op === 'hit' ? limiter.hit(key, rules, options) : limiter.peek(key, rules, options)
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
    }
    const want = Object.fromEntries(Object.keys(got).map((name) => [name, step.expect[name]]))
    assert.deepEqual(got, want, where)
  }
}
