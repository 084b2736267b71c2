// The shared vectors (tests/vectors/*.json) against the WebAssembly build under Node: the same
// decisions as the Rust memory store and the Lua scripts, and the same typed errors.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { test } from 'node:test'

import { Limiter } from '../../bindings-wasm/node.mjs'

const VECTORS = new URL('../vectors/', import.meta.url)
const CODES = {
  INVALID_RULE: 'ERR_RATELOCK_INVALID_RULE',
  INVALID_ARGUMENT: 'ERR_RATELOCK_INVALID_ARGUMENT',
  COST_EXCEEDS_CAPACITY: 'ERR_RATELOCK_COST_EXCEEDS_CAPACITY',
}

for (const file of readdirSync(VECTORS).filter((name) => name.endsWith('.json')).sort()) {
  const { scenarios } = JSON.parse(readFileSync(new URL(file, VECTORS), 'utf8'))
  for (const scenario of scenarios) {
    test(`${file}/${scenario.name}`, () => {
      const limiter = new Limiter()
      for (const [index, step] of scenario.steps.entries()) {
        const key = step.key ?? scenario.key ?? 'k'
        const rules = step.rules ?? scenario.rules
        const where = `step ${index} (${step.op} at ${step.now_us})`
        if (step.op === 'reset') {
          limiter.reset(key, rules)
          continue
        }
        if (!['hit', 'peek', 'refund', 'reserve'].includes(step.op)) {
          // block, deny, allow (for for_us), unblock, clear, set_override, clear_override: the
          // limiter's methods.
          const nowMs = step.now_us / 1000
          const change = () =>
            step.op === 'set_override'
              ? limiter.setOverride(key, step.override_rules, undefined, nowMs)
              : step.op === 'clear_override'
                ? limiter.clearOverride(key, nowMs)
                : ['block', 'deny', 'allow'].includes(step.op)
                  ? limiter[step.op](key, step.for_us / 1000, nowMs)
                  : limiter[step.op](key, nowMs)
          if (step.expect_error) {
            assert.throws(change, (error) => error.code === CODES[step.expect_error], where)
            continue
          }
          const changed = change()
          if (step.expect_changed !== undefined) assert.equal(changed, step.expect_changed, where)
          continue
        }
        const call =
          step.op === 'reserve'
            ? () => limiter.reserve(key, rules, step.max_wait_us / 1000, step.cost ?? 1, step.now_us / 1000)
            : () => limiter[step.op](key, rules, step.cost ?? 1, step.now_us / 1000)
        if (step.expect_error) {
          assert.throws(call, (error) => error.code === CODES[step.expect_error], where)
          continue
        }
        const decision = call()
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
      limiter.free()
    })
  }
}

test('bad input gets named, typed errors', () => {
  const limiter = new Limiter()
  const cases = [
    [() => limiter.hit('k', '10 per fortnight'), 'InvalidRuleError', 'ERR_RATELOCK_INVALID_RULE', /fortnight/],
    [() => limiter.hit('k', '1/second', 0), 'InvalidArgumentError', 'ERR_RATELOCK_INVALID_ARGUMENT', /`cost`/],
    [() => limiter.hit('k', '1/second', 1.5), 'InvalidArgumentError', 'ERR_RATELOCK_INVALID_ARGUMENT', /`cost`/],
    [() => limiter.hit('k', '1/second', 1, -1), 'InvalidArgumentError', 'ERR_RATELOCK_INVALID_ARGUMENT', /`nowMs`/],
    [() => limiter.hit('k', '5/second', 9), 'CostExceedsCapacityError', 'ERR_RATELOCK_COST_EXCEEDS_CAPACITY', /capacity/],
    [() => new Limiter({ maxKeys: 0 }), 'InvalidArgumentError', 'ERR_RATELOCK_INVALID_ARGUMENT', /`maxKeys`/],
    [() => new Limiter({ whenFull: 'evict' }), 'InvalidArgumentError', 'ERR_RATELOCK_INVALID_ARGUMENT', /`whenFull`/],
    [() => new Limiter({ defaultAlgorithm: 'magic' }), 'InvalidRuleError', 'ERR_RATELOCK_INVALID_RULE', /magic/],
  ]
  for (const [call, name, code, message] of cases) {
    assert.throws(call, (error) => {
      assert.ok(error instanceof Error)
      assert.equal(error.name, name)
      assert.equal(error.code, code)
      assert.match(error.message, message)
      return true
    })
  }
})

test('a key or rule that is not a string is refused by name, and the module keeps working', () => {
  // wasm-bindgen's glue copied a number as if it were text: a read past the module's memory (a trap
  // that left the module unusable), or "Cannot read properties of undefined" naming no argument.
  const limiter = new Limiter()
  const refused = [
    [() => limiter.hit(42, '1/minute'), /`key`: expected a string, got number/],
    [() => limiter.hit(undefined, '1/minute'), /`key`: expected a string, got undefined/],
    [() => limiter.peek('k', { rule: '1/minute' }), /`rules`: expected a string, got object/],
    [() => limiter.setOverride(7, '5/minute'), /`key`/],
    [() => limiter.block(['k'], 1000), /`key`/],
    [() => limiter.reset('k'.repeat(65 * 1024), '1/minute'), /`key`/],
    [() => limiter.deny('k'.repeat(65 * 1024), 1000), /`key`/],
  ]
  for (const [call, message] of refused) {
    assert.throws(call, (error) => {
      assert.equal(error.code, 'ERR_RATELOCK_INVALID_ARGUMENT', String(error))
      assert.match(error.message, message)
      return true
    })
  }
  assert.equal(limiter.hit('42', '1/minute').allowed, true)
  assert.equal(limiter.hit('42', '1/minute').allowed, false)
})

test('a full store and an override cleared on the caller\'s clock answer as in Node', () => {
  // A full memory store refused with a RatelockError (Node: StoreUnavailableError); clearOverride read
  // Date.now() whatever clock set the override, so one set at nowMs 0 for a minute "had none".
  const full = new Limiter({ maxKeys: 64 })
  assert.throws(() => {
    for (let i = 0; i < 1000; i++) full.hit(`k${i}`, '1/minute', 1, 1000)
  }, (error) => error.name === 'StoreUnavailableError' && error.code === 'ERR_RATELOCK_STORE_UNAVAILABLE')
  const limiter = new Limiter()
  limiter.setOverride('tenant', '100/minute', 60_000, 0)
  assert.equal(limiter.clearOverride('tenant', 1000), true)
  assert.equal(limiter.clearOverride('tenant', 1000), false)
})

test('without nowMs the clock is Date.now()', () => {
  const limiter = new Limiter()
  assert.ok(limiter.hit('k', '1/minute').allowed)
  const denied = limiter.peek('k', '1/minute')
  assert.ok(!denied.allowed && denied.retryAfterMs > 59_000 && denied.retryAfterMs <= 60_000)
})
