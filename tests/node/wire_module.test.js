'use strict'
// The Limiter's wire path (lib/wire-socket.js) takes the ratelock module's RATELOCK.LIMIT where the server has
// it, by the store's rules: the vectors decide alike through it; `auto` checks each connection and
// uses the module once the check answers; `server_code=scripts` sends EVALSHA only and `lua` the
// Functions library (FCALL); a module unloaded under a live limiter (or denied by the ACL) costs no
// call: the call goes again at once as FCALL, and a new connection finds a reloaded module again;
// `server_code=module` on a server without it is a configuration error.
// Which code ran is read from the server's INFO commandstats. Real redis-server only.

const assert = require('node:assert/strict')
const { randomUUID } = require('node:crypto')
const { after, before, describe, test } = require('node:test')
const { setTimeout: sleep } = require('node:timers/promises')

const { ConfigurationError, Limiter } = require('../../bindings-node')
const { commandCalls, modulePath } = require('./redis-module')
const { RedisServer } = require('./redis-server')
const { runScenario, vectorScenarios } = require('./vector-runner')

let withModule
before(async () => {
  withModule = await RedisServer.start({ loadModule: modulePath() })
})
after(() => withModule.close())

const fresh = () => `wm:${randomUUID()}`
const resetStats = (server) => server.command('CONFIG', 'RESETSTAT')

describe('the vectors through the module (server_code=module)', () => {
  for (const { name, scenario } of vectorScenarios()) {
    test(name, () => runScenario(`${withModule.url}?server_code=module`, scenario))
  }
  test('RATELOCK.LIMIT served every hit, peek and refund; EVALSHA ran only the entry changes', async () => {
    const calls = await commandCalls(withModule)
    assert.ok(calls['ratelock.limit'] > 100, `RATELOCK.LIMIT ran ${calls['ratelock.limit']} times`)
    // block, unblock, deny, allow and clear run standing.lua (no module command: they are rare).
    const changes = vectorScenarios()
      .flatMap(({ scenario }) => scenario.steps)
      .filter((step) => ['block', 'unblock', 'deny', 'allow', 'clear'].includes(step.op) && step.expect_error === undefined).length
    // Each once, and the first a second time: its NOSCRIPT (counted by the server) loads the script.
    assert.equal(calls.evalsha, changes + 1)
  })
})

test('auto uses the module once the connection has checked for it', async () => {
  const limiter = new Limiter({ url: withModule.url })
  const key = fresh()
  // The first call goes out before the check has answered (as EVALSHA); its reply comes after.
  assert.equal((await limiter.hit(key, '50/minute')).remaining, 49)
  await resetStats(withModule)
  for (let spent = 2; spent <= 21; spent++) {
    assert.equal((await limiter.hit(key, '50/minute')).remaining, 50 - spent)
  }
  assert.equal((await limiter.peek(key, '50/minute')).remaining, 28)
  const calls = await commandCalls(withModule)
  assert.equal(calls['ratelock.limit'], 21)
  assert.equal(calls.evalsha, undefined)
})

for (const [forced, runs] of [
  ['scripts', 'evalsha'],
  ['lua', 'fcall'],
]) {
  test(`server_code=${forced} sends ${runs.toUpperCase()} only, and never asks for the module`, async () => {
    const limiter = new Limiter({ url: `${withModule.url}?server_code=${forced}` })
    const key = fresh()
    await limiter.peek(key, '50/minute') // opens the connection and its check, if any
    await resetStats(withModule)
    for (let spent = 1; spent <= 10; spent++) {
      assert.equal((await limiter.hit(key, '50/minute')).remaining, 50 - spent)
    }
    const calls = await commandCalls(withModule)
    assert.ok(calls[runs] >= 10, `${runs} ran ${calls[runs]} times: ${JSON.stringify(calls)}`)
    assert.equal(calls['ratelock.limit'], undefined)
    assert.equal(calls['ratelock.version'], undefined)
    assert.deepEqual(
      Object.keys(calls).filter((name) => name.startsWith('command')),
      [],
      'no COMMAND INFO',
    )
  })
}

test('a module unloaded under a live limiter costs no call; a new connection finds it reloaded', async () => {
  const server = await RedisServer.start({ loadModule: modulePath(), extraArgs: ['--enable-module-command', 'yes'] })
  try {
    const limiter = new Limiter({ url: server.url })
    const [key, rules] = [fresh(), '15/minute']
    let spent = 0
    /** `count` hits at once; each must be admitted with the remaining count that its order gives. */
    const hits = async (count) => {
      const decisions = await Promise.all(Array.from({ length: count }, () => limiter.hit(key, rules)))
      const remaining = decisions.map((decision) => decision.remaining).sort((a, b) => b - a)
      const expected = Array.from({ length: count }, (_, i) => 15 - spent - 1 - i)
      spent += count
      assert.deepEqual(remaining, expected)
      assert.ok(decisions.every((decision) => decision.allowed))
    }
    await hits(1) // opens the connection and its check
    await resetStats(server)
    await hits(2)
    assert.equal((await commandCalls(server))['ratelock.limit'], 2)

    assert.equal(await server.command('MODULE', 'UNLOAD', 'ratelock'), 'OK')
    await resetStats(server)
    await hits(3) // sent as RATELOCK.LIMIT, refused, sent again as FCALL (the check loaded the library)
    let calls = await commandCalls(server)
    assert.ok(calls.fcall >= 3, `FCALL ran ${calls.fcall} times`)
    assert.equal(calls['ratelock.limit'], undefined)

    assert.equal(await server.command('MODULE', 'LOAD', modulePath()), 'OK')
    await resetStats(server)
    await hits(2)
    calls = await commandCalls(server)
    assert.equal(calls['ratelock.limit'], undefined, 'this connection stays on FCALL after a refusal')
    assert.equal(calls.fcall, 2)

    await server.command('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
    await sleep(100)
    await hits(1) // a new connection, and its check
    await resetStats(server)
    await hits(2)
    calls = await commandCalls(server)
    assert.equal(calls['ratelock.limit'], 2, 'the new connection found the module again')
    assert.equal(calls.fcall, undefined)

    await hits(15 - spent)
    assert.equal((await limiter.hit(key, rules)).allowed, false)
  } finally {
    await server.close()
  }
})

test('a module command the ACL denies goes again as FCALL', async () => {
  const user = `u${randomUUID().slice(0, 8)}`
  const acl = ['ACL', 'SETUSER', user, 'on', '>pw', '~*', '&*', '+@all', '-ratelock.limit']
  assert.equal(await withModule.command(...acl), 'OK')
  const limiter = new Limiter({ url: `redis://${user}:pw@127.0.0.1:${withModule.port}/` })
  const key = fresh()
  assert.equal((await limiter.hit(key, '9/minute')).remaining, 8)
  await resetStats(withModule)
  for (let spent = 2; spent <= 5; spent++) {
    assert.equal((await limiter.hit(key, '9/minute')).remaining, 9 - spent)
  }
  const calls = await commandCalls(withModule)
  assert.ok(calls.fcall >= 4, `FCALL ran ${calls.fcall} times`)
  assert.equal(calls['ratelock.limit'], 0, 'RATELOCK.LIMIT never ran')
  // It was sent, and refused by the ACL: the connection's check had found the module.
  assert.match(await withModule.command('INFO', 'commandstats'), /cmdstat_ratelock\.limit:calls=0,.*rejected_calls=1\b/i)
})

test('server_code=module on a server without the module is a configuration error', async () => {
  const plain = await RedisServer.start()
  try {
    for (const onError of ['raise', 'allow']) {
      const limiter = new Limiter({ url: `${plain.url}?server_code=module`, onError })
      for (const call of [limiter.hit(fresh(), '5/second'), limiter.peek(fresh(), '5/second')]) {
        await assert.rejects(call, (error) => {
          assert.ok(error instanceof ConfigurationError, `${error.name}: ${error.message}`)
          assert.equal(error.code, 'ERR_RATELOCK_CONFIGURATION')
          assert.match(error.message, /module/)
          return true
        })
      }
    }
  } finally {
    await plain.close()
  }
})
