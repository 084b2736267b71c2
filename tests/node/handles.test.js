'use strict'
// The addon's handles (a memory checker, a wire codec, prepared rules: external values it makes and
// reads back per call, src/handle.rs): a handle of another kind, or a value that is no handle, is
// refused with an error naming what was expected, never read as something it is not.

const assert = require('node:assert/strict')
const { after, before, test } = require('node:test')

const native = require('../../bindings-node/lib/native')

const checkInMemory = native.memoryCheckFunction()
const { RedisServer } = require('./redis-server')

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

function handles() {
  const memory = native.openLimiterNow({ store: {} })
  const out = new Float64Array(64)
  const checker = native.memoryChecker(memory, out)
  const rules = memory.prepareRules('10/second').rules
  const onRedis = native.openLimiterNow({ store: { url: redis.url } })
  const opened = native.openWire(onRedis, redis.url, out)
  assert.notEqual(opened, null)
  return { checker, rules, codec: opened.codec, out }
}

/** `call()` throws an error saying it expected `kind`. */
function refuses(call, kind) {
  assert.throws(call, (error) => {
    assert.match(error.message, new RegExp(`expected the addon's ${kind} value`))
    return true
  })
}

test('each handle works where its own kind is expected', () => {
  const { checker, rules, codec, out } = handles()
  checkInMemory(checker, 'handles:own', rules, 1, undefined, true)
  assert.equal(out[0], 1)
  assert.equal(native.wireAdmit(codec), true)
  assert.equal(native.wireNextDeadline(codec), null)
})

test('a handle of another kind is refused, not read as the kind expected', () => {
  const { checker, rules, codec } = handles()
  refuses(() => checkInMemory(codec, 'handles:k', rules, 1, undefined, true), 'MemoryChecker')
  refuses(() => checkInMemory(rules, 'handles:k', rules, 1, undefined, true), 'MemoryChecker')
  refuses(() => checkInMemory(checker, 'handles:k', checker, 1, undefined, true), 'Arc<PreparedRules>')
  refuses(() => checkInMemory(checker, 'handles:k', codec, 1, undefined, true), 'Arc<PreparedRules>')
  refuses(() => native.wireAdmit(checker), 'WireCodec')
  refuses(() => native.wireTakeOutput(rules), 'WireCodec')
  refuses(() => native.wireFeedInto(checker, Buffer.from('+OK\r\n'), 0), 'WireCodec')
  refuses(() => native.wireAdopt(codec, codec), 'Unsent')
})

test('a value that is no handle is refused', () => {
  const { checker, rules } = handles()
  for (const value of [{}, null, undefined, 7, 'codec', Buffer.from('x'), [checker]]) {
    refuses(() => checkInMemory(value, 'handles:k', rules, 1, undefined, true), 'MemoryChecker')
    refuses(() => native.wireAdmit(value), 'WireCodec')
  }
})

test('a handle stays valid while JavaScript holds it, across collections', async () => {
  const { checker, rules, out } = handles()
  for (let round = 0; round < 5; round++) {
    // Many handles made and dropped: their finalizers run, and must not take the held ones with them.
    for (let i = 0; i < 2000; i++) handles()
    if (global.gc) global.gc()
    await new Promise((resolve) => setImmediate(resolve))
    checkInMemory(checker, 'handles:held', rules, 1, undefined, true)
    assert.equal(out[0], 1)
  }
})

test('the memory check reads its arguments as the other functions do: a wrong or missing one throws, naming it', () => {
  const { checker, rules, out } = handles()
  checkInMemory(checker, 'handles:arguments', rules, undefined, null, true)
  assert.equal(out[0], 1, 'a missing cost and clock are the defaults')
  assert.throws(() => checkInMemory(checker, 'handles:arguments', rules, 'one', undefined, true), /f64|number/i)
  assert.throws(() => checkInMemory(checker, 42, rules, 1, undefined, true), {
    code: 'ERR_RATELOCK_INVALID_ARGUMENT',
    message: 'invalid argument `key`: expected a string or a Buffer',
  })
  assert.throws(() => checkInMemory(checker, 'handles:arguments', rules, 1, undefined), /bool/i)
  assert.throws(() => checkInMemory(), /MemoryChecker/)
  // The addon's errors carry their code as `code`, and a message that is only the message.
  assert.throws(() => checkInMemory(checker, 'handles:arguments', rules, 0, undefined, true), {
    code: 'ERR_RATELOCK_INVALID_ARGUMENT',
    message: 'invalid argument `cost`: expected an integer >= 1, got 0',
  })
})
