'use strict'
// Random and hostile input to the public Node API (fast-check): every call resolves, or rejects/throws
// one of ratelock's typed errors (a RatelockError, or a TypeError for an argument of the wrong
// JavaScript type), never another error, a crash or a hang. Bounded: a fixed number of runs.

const assert = require('node:assert/strict')
const { test } = require('node:test')
const fc = require('fast-check')

const ratelock = require('../../bindings-node')

const RUNS = { numRuns: 300 }
const ruleWords = fc.constantFrom(
  '10/second', '5/minute', 'burst', 'using', 'gcra', 'sliding_log', 'token_bucket', ';', '0', '-1',
  '99999999999999999999', '/', 'per', 'second', 'fixed_window', ' ', '\u0000', '{}', '1e9',
)
const ruleText = fc.oneof(fc.string({ maxLength: 60 }), fc.array(ruleWords, { maxLength: 8 }).map((w) => w.join(' ')))
const anything = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.integer(),
  fc.double(),
  fc.constant(null),
  fc.constant(undefined),
  fc.boolean(),
  fc.uint8Array({ maxLength: 40 }).map((bytes) => Buffer.from(bytes)),
  fc.object({ maxDepth: 1 }),
)

/** `call()`'s outcome: its value, or `undefined` after a typed error; anything else fails the test. */
async function answersOrTyped(call) {
  try {
    return await call()
  } catch (error) {
    assert.ok(error instanceof ratelock.RatelockError || error instanceof TypeError, `untyped: ${error && error.stack}`)
    return undefined
  }
}

const limiter = new ratelock.Limiter()

test('hit and peek answer a decision or a typed error for any input', async () => {
  await fc.assert(
    fc.asyncProperty(anything, ruleText, anything, async (key, rules, cost) => {
      for (const method of ['hit', 'peek']) {
        const decision = await answersOrTyped(() => limiter[method](key, rules, { cost }))
        if (decision !== undefined) assert.ok(decision.remaining >= 0 && decision.remaining <= decision.limit)
      }
    }),
    RUNS,
  )
})

test('rule text either parses or names what is wrong', async () => {
  await fc.assert(
    fc.asyncProperty(ruleText, async (rules) => {
      try {
        await limiter.peek('k', rules)
      } catch (error) {
        assert.ok(error instanceof ratelock.RatelockError, String(error))
        if (error instanceof ratelock.InvalidRuleError) assert.match(error.message, /invalid rule/)
      }
    }),
    RUNS,
  )
})

test('the lock kinds take any arguments without crashing', async () => {
  await fc.assert(
    fc.asyncProperty(anything, anything, anything, async (name, ttlMs, permits) => {
      const kinds = [
        () => new ratelock.DistributedLock(name, { ttlMs }),
        () => new ratelock.Semaphore(name, permits, { ttlMs }),
        () => new ratelock.FairLock(name, { ttlMs }),
      ]
      for (const make of kinds) {
        const lock = await answersOrTyped(make)
        if (lock === undefined) continue
        await answersOrTyped(async () => {
          if (await lock.tryAcquire()) await lock.release()
        })
      }
    }),
    { numRuns: 150 },
  )
})

test('a misspelt option is an invalid argument naming it, never a default taken without a word', async () => {
  const misspelt = (error, field) => {
    assert.ok(error instanceof ratelock.InvalidArgumentError, String(error))
    assert.match(error.message, new RegExp(`has no option "${field}" \\(the options here: `))
    return true
  }
  assert.throws(() => new ratelock.Limiter({ timeout_ms: 5 }), (error) => misspelt(error, 'timeout_ms'))
  assert.throws(() => new ratelock.Limiter({ onerror: 'allow' }), (error) => misspelt(error, 'onerror'))
  assert.throws(() => new ratelock.Semaphore('s', 2, { ttlms: 1 }), (error) => misspelt(error, 'ttlms'))
  // Per call: a misspelt cost would spend 1 (admitting more than asked); a misspelt wait would not end.
  await assert.rejects(limiter.hit('typo', '10/second', { cots: 5 }), (error) => misspelt(error, 'cots'))
  assert.throws(() => limiter.hitSync('typo', '10/second', { cots: 5 }), (error) => misspelt(error, 'cots'))
  const lock = new ratelock.DistributedLock('typo')
  await assert.rejects(lock.acquire({ timeout: 300 }), (error) => misspelt(error, 'timeout'))
  await assert.rejects(limiter.reserve('typo', '10/second', { maxWait: 5 }), (error) => misspelt(error, 'maxWait'))
  // A field left undefined is no option given (an object spread from another's fields).
  assert.equal((await limiter.hit('typo', '10/second', { cost: 2, nowMs: undefined, extra: undefined })).remaining, 8)
})
