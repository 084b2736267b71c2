'use strict'
// The fault suite from Node: clients with their own limiters and locks (the JavaScript wire client for a
// plain redis:// server) run through the test kit's fault proxy while it plays a seeded plan of every
// proxy fault, or straight at a server that is frozen, has its scripts and functions flushed and its
// clients killed (the Rust suite's faults that keep server state) or is killed and restarted empty
// (state lost once), or at a Sentinel group whose master is killed and whose replica is promoted (state
// lost once), write their history in the suite's one JSON-lines format, and the Rust checker
// (`check_history`) reads it against the same invariants as the Rust and Python clients'.

const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const os = require('node:os')
const path = require('node:path')
const { test } = require('node:test')

const ratelock = require('../../bindings-node')
const { RedisServer } = require('./redis-server')
const { kitBinaries, Proxy, SentinelGroup } = require('./kit-processes')

const REPO = path.resolve(__dirname, '../..')
const SEED = 20261125
const TIMEOUT_MS = 200
// The most calls one client makes in a run: enough to outlast any run's faults (a client must still be
// calling after them), while `stopped()` ends it first.
const HITS_PER_CLIENT = 20_000
const LOCK_PAIRS_PER_CLIENT = 5_000
/** The longest the clients run on after the faults for a call begun then to be served. */
const SERVED_AGAIN_WITHIN_MS = 5_000
const RULES = {
  gcra: '20/second',
  bucket: '20/second using token_bucket',
  fixed: '20/second using fixed_window',
  sliding: '20/second using sliding_window',
  log: '20/second using sliding_log',
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Operations of every client on one monotonic clock. */
class History {
  constructor() {
    this.started = process.hrtime.bigint()
    this.ops = []
  }

  nowNs() {
    return Number(process.hrtime.bigint() - this.started)
  }

  push(op) {
    this.ops.push(Object.fromEntries(Object.entries(op).filter(([, v]) => v !== undefined && v !== null)))
  }
}

function outcomeOf(error) {
  if (error instanceof ratelock.ProtocolError) return 'protocol'
  if (error instanceof ratelock.StoreUnavailableError) return 'ambiguous'
  return 'fail'
}

function check(binaries, history, name, args) {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ratelock-faults-')), name)
  fs.writeFileSync(file, history.ops.map((op) => `${JSON.stringify(op)}\n`).join(''))
  const checked = spawnSync(path.join(binaries, 'check_history'), [file, ...args], { encoding: 'utf8' })
  console.log(checked.stdout)
  assert.equal(checked.status, 0, `seed ${SEED}: ${checked.stdout}${checked.stderr}`)
}

/**
 * Runs `work(client, url, stopped)` for `perUrl` clients per URL while `faults()` plays. Calls begun
 * after the faults must be served again: the clients run on until one of them succeeds, for at most
 * `SERVED_AGAIN_WITHIN_MS` (a lock wait begun before the faults ended can outlast a fixed pause).
 */
async function runClientsOn(urls, perUrl, work, faults, history) {
  let stopped = false
  const clients = urls.flatMap((url, at) => Array.from({ length: perUrl }, (_, n) => work(`node-${at}-${n}`, url, () => stopped)))
  // Store calls only: a write to the fenced resource touches no store.
  const servedAfter = (over) => history.ops.filter((op) => op.invoke_ns > over && op.outcome === 'ok' && op.op !== 'write').length
  let over
  try {
    await faults()
    over = history.nowNs()
    const deadline = Date.now() + SERVED_AGAIN_WITHIN_MS
    await sleep(500)
    while (servedAfter(over) === 0 && Date.now() < deadline) await sleep(50)
  } finally {
    stopped = true
    await Promise.all(clients)
  }
  const served = servedAfter(over)
  console.log(`calls served after the faults: ${served}`)
  assert.ok(served > 0, 'no call was served after the faults were over')
}

/**
 * The Rust suite's server faults that keep state, one after another: frozen (SIGSTOP, then SIGCONT),
 * scripts flushed, the function library flushed, every client's connection killed, frozen again.
 */
async function serverFaultsKeepingState(server) {
  await sleep(200)
  server.pause()
  await sleep(300)
  server.resume()
  await sleep(200)
  await server.command('SCRIPT', 'FLUSH')
  await sleep(100)
  await server.command('FUNCTION', 'FLUSH')
  await sleep(100)
  await server.command('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes')
  await sleep(200)
  server.pause()
  await sleep(150)
  server.resume()
  await sleep(450)
}

/**
 * The Rust suite's restart without persistence: the server killed (SIGKILL) and started again on its
 * port, empty. Its state is lost once: a limit may admit one more limit's worth, and a fencing token
 * must still rise (it comes from the server's clock).
 */
async function serverRestartedEmpty(server) {
  await sleep(400)
  await server.stop('SIGKILL')
  await server.startAgain()
  await sleep(600)
}

/** The kinds of run, and those that lose the store's state once. */
const KINDS = ['proxy', 'server', 'restart', 'failover']
const LOSING_STATE = new Set(['restart', 'failover'])

/** Runs `body(proxy)` with a server behind a fault proxy of `doors` doors; both stopped at the end. */
async function withProxiedServer(binaries, doors, seed, body) {
  const server = await RedisServer.start()
  try {
    const proxy = await Proxy.start(binaries, 'fault_proxy', [server.port, doors, seed])
    try {
      return await body(proxy)
    } finally {
      await proxy.stop()
    }
  } finally {
    await server.close()
  }
}

/**
 * Runs `work(client, url, stopped)` under a run of one kind, and stops the run. `proxy`: two doors of
 * the fault proxy playing a seeded plan; `server`: the faults that keep state; `restart`: killed and
 * started empty; `failover`: a Sentinel group's master killed and its replica promoted.
 */
async function underFaults(kind, binaries, seed, history, work) {
  const run = (urls, perUrl, faults) => runClientsOn(urls, perUrl, work, faults, history)
  if (kind === 'proxy') {
    return withProxiedServer(binaries, 2, seed, (proxy) =>
      run(proxy.ports.map((port) => `redis://127.0.0.1:${port}/`), 2, () => proxy.command(`plan ${seed} 8 400`)),
    )
  }
  if (kind === 'failover') {
    const group = await SentinelGroup.start(binaries, 'sentinel_group', [])
    try {
      return await run([group.url], 4, () => group.command('failover'))
    } finally {
      await group.stop()
    }
  }
  const server = await RedisServer.start()
  const plays = kind === 'restart' ? serverRestartedEmpty : serverFaultsKeepingState
  try {
    return await run([`redis://127.0.0.1:${server.port}/`], 4, () => plays(server))
  } finally {
    await server.close()
  }
}

for (const kind of KINDS) {
  test(`limits hold their bounds under every ${kind} fault`, async () => {
    const binaries = kitBinaries()
    const history = new History()
    const keys = Object.keys(RULES)
    await underFaults(kind, binaries, SEED, history, async (client, url, stopped) => {
      const limiter = new ratelock.Limiter({ url, timeoutMs: TIMEOUT_MS })
      for (let n = 0; n < HITS_PER_CLIENT && !stopped(); n++) {
        const key = keys[n % keys.length]
        const invoke = history.nowNs()
        let outcome = 'ok'
        let allowed
        try {
          allowed = (await limiter.hit(key, RULES[key])).allowed
        } catch (error) {
          outcome = outcomeOf(error)
        }
        history.push({ client, op: 'hit', key, invoke_ns: invoke, complete_ns: history.nowNs(), outcome, allowed, timeout_ns: TIMEOUT_MS * 1e6 })
        await sleep(outcome === 'ok' ? 2 : 5)
      }
    })
    assert.ok(history.ops.length > 100 && history.ops.filter((op) => op.allowed).length > 20)
    const losses = LOSING_STATE.has(kind) ? ['--state-losses', '1'] : []
    check(binaries, history, 'limits.jsonl', ['--limits', ...keys.map((key) => `${key}=${RULES[key]}`), ...losses])
  })

  test(`one lock holder at a time under every ${kind} fault`, async () => {
    const binaries = kitBinaries()
    const history = new History()
    const ttlMs = 300
    let highest = 0
    const write = (client, token) => {
      // The fenced resource: takes a write only with a token at least the highest (one event loop: atomic).
      const invoke = history.nowNs()
      const taken = token >= highest
      highest = Math.max(highest, token)
      history.push({ client, op: 'write', key: 'faults:node', invoke_ns: invoke, complete_ns: history.nowNs(), outcome: 'ok', allowed: taken, token })
    }
    await underFaults(kind, binaries, SEED + 1, history, async (client, url, stopped) => {
      const lock = new ratelock.DistributedLock('faults:node', { url, ttlMs, timeoutMs: TIMEOUT_MS })
      const waitMs = 2 * ttlMs
      for (let n = 0; n < LOCK_PAIRS_PER_CLIENT && !stopped(); n++) {
        let invoke = history.nowNs()
        let token
        try {
          token = await lock.acquire({ timeoutMs: waitMs })
        } catch (error) {
          const outcome = error instanceof ratelock.WaitTimeoutError ? 'fail' : outcomeOf(error)
          history.push({ client, op: 'acquire', key: 'faults:node', invoke_ns: invoke, complete_ns: history.nowNs(), outcome, timeout_ns: (waitMs + TIMEOUT_MS) * 1e6 })
          continue
        }
        history.push({ client, op: 'acquire', key: 'faults:node', invoke_ns: invoke, complete_ns: history.nowNs(), outcome: 'ok', token, timeout_ns: (waitMs + TIMEOUT_MS) * 1e6 })
        write(client, token)
        await sleep(3)
        invoke = history.nowNs()
        let outcome = 'ok'
        try {
          await lock.release()
        } catch (error) {
          outcome = error instanceof ratelock.LockLostError ? 'fail' : outcomeOf(error)
        }
        history.push({ client, op: 'release', key: 'faults:node', invoke_ns: invoke, complete_ns: history.nowNs(), outcome, token, timeout_ns: TIMEOUT_MS * 1e6 })
      }
    })
    assert.ok(history.ops.filter((op) => op.op === 'acquire' && op.outcome === 'ok').length > 20)
    check(binaries, history, 'locks.jsonl', ['--locks', String(ttlMs), ...(LOSING_STATE.has(kind) ? ['--state-lost'] : [])])
  })
}

test('an idle reset (RST) fails no call: the wire client and the lock path reconnect, every hit counts once', async () => {
  const binaries = kitBinaries()
  await withProxiedServer(binaries, 1, SEED, async (proxy) => {
    const url = `redis://127.0.0.1:${proxy.ports[0]}/`
    const limiter = new ratelock.Limiter({ url })
    const lock = new ratelock.DistributedLock('idle-reset', { url })
    let admitted = 0
    for (let round = 0; round < 8; round++) {
      admitted += (await limiter.hit('idle-reset', '20/minute')).allowed ? 1 : 0
      await limiter.peek('idle-reset', '20/minute')
      await lock.acquire({ timeoutMs: 1000 })
      await lock.release()
      await sleep(50)
      await proxy.command('cut 0')
      await sleep(50)
    }
    assert.equal(admitted, 8)
  })
})

test('a grant nobody heard of is given back: the lock frees long before its lease ends, and the handle takes it again', async () => {
  const binaries = kitBinaries()
  const server = await RedisServer.start()
  try {
    const proxy = await Proxy.start(binaries, 'fault_proxy', [server.port, 1, SEED])
    try {
      const url = `redis://127.0.0.1:${proxy.ports[0]}/`
      const seen = new ratelock.DistributedLock('unanswered-node', { url: `redis://127.0.0.1:${server.port}/` })
      const lock = new ratelock.DistributedLock('unanswered-node', { url, ttlMs: 30_000, timeoutMs: 300 })
      await lock.acquire({ timeoutMs: 1000 })
      await lock.release()
      // Replies thrown away: the server runs the acquire, the client hears nothing.
      await proxy.command('set 0 0 0 0 1 0 0')
      await assert.rejects(lock.tryAcquire(), (err) => err instanceof ratelock.RatelockError)
      await proxy.command('clear')
      const until = Date.now() + 5000
      while ((await seen.isLocked()) && Date.now() < until) await sleep(20)
      assert.equal(await seen.isLocked(), false, 'the grant nobody heard of still holds the lock')
      await lock.acquire({ timeoutMs: 5000 })
      await lock.release()
    } finally {
      await proxy.stop()
    }
  } finally {
    await server.close()
  }
})
