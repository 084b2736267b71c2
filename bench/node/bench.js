'use strict'
// make bench, Node part: the npm package against its peers from npm, in one run against one local
// redis-server started here: rate-limiter-flexible (RateLimiterRedis on ioredis, RateLimiterMemory),
// rate-limit-redis's store, express-rate-limit + rate-limit-redis through real HTTP, and redlock.
// Prints a table of rates and ratios and writes bench/node/RESULTS.md.

const { spawn, execFileSync } = require('node:child_process')
const fs = require('node:fs')
const http = require('node:http')
const net = require('node:net')
const os = require('node:os')
const path = require('node:path')
const zlib = require('node:zlib')

const Redis = require('ioredis')
const express = require('express')
const { RateLimiterRedis, RateLimiterMemory } = require('rate-limiter-flexible')
const { rateLimit: expressRateLimit } = require('express-rate-limit')
const { RedisStore } = require('rate-limit-redis')
const Redlock = require('redlock')
const ratelock = require('ratelock')
const { rateLimit: ratelockRateLimit } = require('ratelock/express')
const frameworks = require('./frameworks')
const { RedisServer: TestRedisServer } = require('../../tests/node/redis-server')
const overhead = require('./overhead')

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2.5)
const WARMUP_SECONDS = 0.5
/** Rounds of an alternating comparison (`alternating`): each variant measured this many times, in turn. */
const ROUNDS = 3
const CONCURRENT = 100
const HTTP_CONNECTIONS = 16
const RESULTS = path.join(__dirname, 'RESULTS.md')
const HUGE = 1_000_000_000 // limits no benchmark call reaches
const RULE = '1000000/second' // ratelock's rule for the same: no hit here is denied

// --------------------------------------------------------------------------------------------
// Measuring

/** Calls `call` one at a time: a warm-up, then `seconds`; rate, p50/p99 latency and the latencies (ns). */
async function sequential(call, seconds = SECONDS) {
  await run(call, WARMUP_SECONDS, () => {})
  const latencies = []
  const { count, elapsed } = await run(call, seconds, (ns) => latencies.push(ns))
  return { rate: count / elapsed, ...latencyFigures(latencies), latencies }
}

/** p50 and p99, in µs, of latencies in ns (sorted here). */
function latencyFigures(latencies) {
  latencies.sort((a, b) => a - b)
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] / 1000
  return { p50: at(0.5), p99: at(0.99) }
}

/**
 * `variants` (name → what `measure` takes) each measured `ROUNDS` times, taking turns, so that a slow
 * spell of this VM falls on every variant alike rather than on whichever ran then. Per variant: the
 * median round's rate, p50/p99 over every round's calls pooled, and `spread`, the slowest and fastest
 * round's rates. `measure(variant, seconds)` answers one round's figure (with its `latencies`).
 */
async function alternating(variants, measure, seconds = SECONDS) {
  const rounds = Object.fromEntries(Object.keys(variants).map((name) => [name, []]))
  for (let round = 0; round < ROUNDS; round++) {
    for (const [name, variant] of Object.entries(variants)) rounds[name].push(await measure(variant, seconds / ROUNDS))
  }
  const pooled = (figures) => {
    const rates = figures.map((figure) => figure.rate).sort((a, b) => a - b)
    const latencies = figures.flatMap((figure) => figure.latencies ?? [])
    return {
      rate: rates[Math.floor(rates.length / 2)],
      spread: [rates[0], rates[rates.length - 1]],
      ...(latencies.length > 0 ? latencyFigures(latencies) : {}),
    }
  }
  return Object.fromEntries(Object.entries(rounds).map(([name, figures]) => [name, pooled(figures)]))
}

/** `sequential` for a synchronous `call` (no Promise, no await between calls). */
function sequentialSync(call, seconds = SECONDS) {
  const loop = (span, record) => {
    let count = 0
    const start = process.hrtime.bigint()
    const end = start + BigInt(Math.round(span * 1e9))
    let now = start
    while (now < end) {
      call()
      const after = process.hrtime.bigint()
      record(Number(after - now))
      now = after
      count++
    }
    return { count, elapsed: Number(now - start) / 1e9 }
  }
  loop(WARMUP_SECONDS, () => {})
  const latencies = []
  const { count, elapsed } = loop(seconds, (ns) => latencies.push(ns))
  return { rate: count / elapsed, ...latencyFigures(latencies), latencies }
}

async function run(call, seconds, record) {
  let count = 0
  const start = process.hrtime.bigint()
  const end = start + BigInt(Math.round(seconds * 1e9))
  let now = start
  while (now < end) {
    await call()
    const after = process.hrtime.bigint()
    record(Number(after - now))
    now = after
    count++
  }
  return { count, elapsed: Number(now - start) / 1e9 }
}

/** `workers` loops of `call` at once (promises in flight together); total rate. */
async function concurrent(call, workers = CONCURRENT, seconds = SECONDS) {
  let stop = false
  let done = 0
  let counting = false
  const loop = async () => {
    while (!stop) {
      await call()
      if (counting) done++
    }
  }
  const loops = Array.from({ length: workers }, loop)
  await sleep(WARMUP_SECONDS * 1000)
  counting = true
  const start = process.hrtime.bigint()
  await sleep(seconds * 1000)
  const elapsed = Number(process.hrtime.bigint() - start) / 1e9
  const finished = done
  stop = true
  await Promise.all(loops)
  return { rate: finished / elapsed }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

// --------------------------------------------------------------------------------------------
// The contenders

function ratelockHit(url, key, options = {}) {
  const limiter = new ratelock.Limiter({ url, ...options })
  return () => limiter.hit(key, RULE)
}

/**
 * The same hit on the addon's runtime, the path cluster and Sentinel URLs take (a socket on the
 * runtime's thread, two thread hand-offs per call): the limiter opens while the package's JS-socket
 * client declines every URL. Resolves once the first hit has gone that way.
 */
async function ratelockRuntimeHit(url, key, options = {}) {
  const { WireClient } = require(path.join(path.dirname(require.resolve('ratelock')), 'lib', 'wire-socket.js'))
  const open = WireClient.open
  WireClient.open = () => null
  const limiter = new ratelock.Limiter({ url, ...options })
  try {
    await limiter.hit(key, RULE)
  } finally {
    WireClient.open = open
  }
  return () => limiter.hit(key, RULE)
}

function flexibleHit(client, key) {
  const limiter = new RateLimiterRedis({ storeClient: client, points: HUGE, duration: 1, keyPrefix: 'rlf' })
  return () => limiter.consume(key)
}

function rateLimitRedisHit(client, key) {
  const store = new RedisStore({ sendCommand: (command, ...args) => client.call(command, ...args), prefix: 'rlr:' })
  store.init({ windowMs: 1000 })
  return () => store.increment(key)
}

function ratelockLockPair(url) {
  const lock = new ratelock.DistributedLock('bench:lock', { url, ttlMs: 10_000, autoRenew: false })
  return async () => {
    await lock.acquire()
    await lock.release()
  }
}

function redlockPair(client) {
  const redlock = new Redlock([client], { retryCount: 0, driftFactor: 0.01 })
  return async () => {
    const lock = await redlock.lock('bench:redlock', 10_000)
    await lock.unlock()
  }
}

function memoryHits() {
  const ours = new ratelock.Limiter()
  const theirs = new RateLimiterMemory({ points: HUGE, duration: 1 })
  return [() => ours.hit("bench:memory", RULE), () => theirs.consume("bench:memory")]
}

/** Memory-store hits with `ratelock/otel` on an SDK provider, and the floor: the same two recordings
 * (a decision, a round trip) made straight on the same kind of instruments from JavaScript. */
function meteredHits() {
  const { MeterProvider } = require('@opentelemetry/sdk-metrics')
  const { Metrics } = require('ratelock/otel')
  const metered = new ratelock.Limiter({ metrics: new Metrics({ meterProvider: new MeterProvider() }) })
  const meter = new MeterProvider().getMeter('floor')
  const decisions = meter.createCounter('decisions')
  const durations = meter.createHistogram('duration', { unit: 's' })
  const decided = { outcome: 'allowed', reason: 'rule', rule: 'g1000000/1000', store: 'memory', operation: 'hit' }
  const timed = { operation: 'hit', store: 'memory' }
  const floor = async () => {
    decisions.add(1, decided)
    durations.record(1e-6, timed)
  }
  return [() => metered.hit('bench:metered', RULE), floor]
}

// --------------------------------------------------------------------------------------------
// Express through real HTTP

function expressApp(middleware) {
  const app = express()
  if (middleware) app.use(middleware)
  app.get('/item', (_req, res) => res.send('ok'))
  return app
}

async function serve(app) {
  const server = http.createServer(app)
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  return server
}

/** `connections` keep-alive clients requesting GET /item in loops; requests/s and per-request ms. */
async function httpRate(server, connections, seconds = SECONDS) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections })
  const { port } = server.address()
  const request = () =>
    new Promise((resolve, reject) => {
      http
        .get({ host: '127.0.0.1', port, path: '/item', agent }, (res) => {
          if (res.statusCode !== 200) reject(new Error(`status ${res.statusCode}`))
          res.resume()
          res.on('end', resolve)
        })
        .on('error', reject)
    })
  const figure = connections === 1 ? await sequential(request, seconds) : await concurrent(request, connections, seconds)
  agent.destroy()
  return figure
}

// --------------------------------------------------------------------------------------------
// Redis server and report

async function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

async function startRedis(extraArgs = []) {
  return startRedisOn(await freePort(), fs.mkdtempSync(path.join(os.tmpdir(), 'ratelock-bench-node-')), extraArgs)
}

/** The ratelock module `make bench` built (RATELOCK_MODULE_SO); the module rows need it. */
function moduleLibrary() {
  const library = process.env.RATELOCK_MODULE_SO
  if (!library || !fs.existsSync(library)) {
    throw new Error('RATELOCK_MODULE_SO must name the built ratelock module (make bench sets it)')
  }
  return library
}

/** Stops a bench server (let run first, if it was frozen) and removes its directory. */
function stopRedis(redis) {
  redis.child.kill('SIGCONT')
  redis.child.kill('SIGTERM')
  fs.rmSync(redis.dir, { recursive: true, force: true })
}

async function startRedisOn(port, dir, extraArgs = []) {
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extraArgs]
  const child = spawn('redis-server', args, { stdio: 'ignore' })
  for (let i = 0; i < 500; i++) {
    if (await new Promise((resolve) => net.connect(port, '127.0.0.1').once('connect', function () { this.destroy(); resolve(true) }).once('error', () => resolve(false)))) {
      return { port, url: `redis://127.0.0.1:${port}/0`, child, dir }
    }
    await sleep(10)
  }
  throw new Error('redis-server did not start')
}

const rows = []
const measurements = []
const tailTables = []

function record(name, figure) {
  // The raw latencies stay with the caller (`alternating` pools them); the report keeps the figures.
  const { latencies: _latencies, ...figures } = figure
  measurements.push([name, figures])
  const latency = figure.p50 === undefined ? '' : `   p50 ${figure.p50.toFixed(1)} µs   p99 ${figure.p99.toFixed(1)} µs`
  const spread = figure.spread === undefined ? '' : `   (${ROUNDS} rounds: ${spreadText(figure.spread)})`
  console.log(`  ${name.padEnd(62)} ${Math.round(figure.rate).toLocaleString('en-US').padStart(12)}/s${latency}${spread}`)
  return figure
}

/** The slowest and fastest round's rates. */
const spreadText = ([low, high]) => `${Math.round(low).toLocaleString('en-US')}–${Math.round(high).toLocaleString('en-US')}/s`

function compare(name, ours, theirs, target, { lowerIsBetter = false, unit = '/s' } = {}) {
  const ratio = ours / theirs
  const met = target === undefined ? 'info' : (lowerIsBetter ? ratio <= target : ratio >= target) ? 'PASS' : 'BELOW'
  const text = (value) => (unit === '/s' ? `${Math.round(value).toLocaleString('en-US')}/s` : `${value.toFixed(1)} ${unit}`)
  rows.push({ name, ours: text(ours), theirs: text(theirs), ratio: ratio.toFixed(2), target: target === undefined ? '-' : `${lowerIsBetter ? '<=' : '>='} ${target}`, met })
}

function versions() {
  const read = (name) => JSON.parse(fs.readFileSync(path.join(__dirname, 'node_modules', name, 'package.json'), 'utf8')).version
  return ['ratelock', 'rate-limiter-flexible', 'ioredis', 'express', 'express-rate-limit', 'rate-limit-redis', 'redlock',
    'fastify', '@fastify/rate-limit', 'hono', '@hono/node-server', 'hono-rate-limiter']
    .map((name) => `${name} ${read(name)}`)
    .join(', ')
}

function writeResults(started, redisVersion) {
  const lines = [
    '# ratelock Node benchmark results',
    '',
    'Written by `node bench/node/bench.js` (`make bench`).',
    '',
    `- date: ${started.toISOString().replace('T', ' ').slice(0, 19)} UTC`,
    `- nproc: ${os.availableParallelism()}`,
    `- node: ${process.version}, ${process.platform} ${process.arch}`,
    `- ${redisVersion}`,
    `- packages: ${versions()}`,
    '',
    '| comparison | ratelock | peer | ratio | target | result |',
    '|:--|--:|--:|--:|--:|:-:|',
    ...rows.map((r) => `| ${r.name} | ${r.ours} | ${r.theirs} | ${r.ratio} | ${r.target} | ${r.met} |`),
    '',
    '## Every measurement',
    '',
    '| measurement | rate | rounds (slowest–fastest) | p50 | p99 |',
    '|:--|--:|--:|--:|--:|',
    ...measurements.map(([name, f]) => `| ${name} | ${Math.round(f.rate).toLocaleString('en-US')}/s | ${f.spread === undefined ? '-' : spreadText(f.spread)} | ${f.p50 === undefined ? '-' : `${f.p50.toFixed(1)} µs`} | ${f.p99 === undefined ? '-' : `${f.p99.toFixed(1)} µs`} |`),
    '',
    '- Express added time per request = 1/rate(limited) − 1/rate(bare), one keep-alive connection, one request at a time.',
    `- A row with rounds: the variants it compares took turns, ${ROUNDS} rounds of ${(SECONDS / ROUNDS).toFixed(2)} s each (after a ` +
      `${WARMUP_SECONDS} s warm-up), so a slow spell of the machine falls on all of them; its rate is the median round's, its ` +
      'p50 and p99 pool every round\'s calls.',
    '',
    ...(tailTables.length ? ['## Client overhead and tails (sections 1b and 4)', '',
      'Each call timed right after a raw-socket PING; µs. overhead = call − PING × round trips (a lock pair makes two) − ' +
      'server, at p50 and at p99; the last columns are the share of calls in each latency band.', '', ...tailTables, ''] : []),
  ]
  fs.writeFileSync(RESULTS, lines.join('\n'))
}

/**
 * The circuit breaker, for a stopped server (refused) and a frozen one (SIGSTOP): time to open, a
 * hit's p50/p99 while open (target <= 50 µs) and time until the server is used again (<= 1 s).
 */
async function outages() {
  const CALLS = 5000
  for (const how of ['refused', 'frozen']) {
    let redis = await startRedis()
    try {
      const limiter = new ratelock.Limiter({ url: redis.url, onError: 'allow', timeoutMs: 250 })
      await limiter.hit('outage', RULE)
      if (how === 'refused') {
        const exited = new Promise((resolve) => redis.child.once('exit', resolve))
        redis.child.kill('SIGTERM')
        await exited // timed from its exit: the server is down from then on
      } else {
        redis.child.kill('SIGSTOP')
      }
      const down = performance.now()
      while (limiter.breakerState === 'closed' && performance.now() - down < 10_000) await limiter.hit('outage', RULE)
      const toOpenMs = performance.now() - down
      const times = []
      for (let i = 0; i < CALLS; i++) {
        const started = performance.now()
        await limiter.hit('outage', RULE)
        times.push((performance.now() - started) * 1000)
      }
      times.sort((a, b) => a - b)
      const p50 = times[Math.floor(CALLS * 0.5)]
      const p99 = times[Math.floor(CALLS * 0.99)]
      record(`${how}: hits while the breaker is open`, { rate: CALLS / (times.reduce((a, b) => a + b, 0) / 1e6), p50, p99 })
      const back = performance.now()
      if (how === 'refused') {
        const port = redis.port
        redis = await startRedisOn(port, redis.dir)
      } else {
        redis.child.kill('SIGCONT')
      }
      let recoveredMs = null
      while (performance.now() - back < 10_000) {
        if (!(await limiter.hit('outage', RULE)).degraded) {
          recoveredMs = performance.now() - back
          break
        }
        await sleep(1)
      }
      console.log(`  ${how}: the breaker opened ${toOpenMs.toFixed(0)} ms after the server went down; used again ${recoveredMs === null ? 'never' : `${recoveredMs.toFixed(0)} ms`} after it returned`)
      compare(`outage ${how}: hit p50 while open vs the 50 µs target`, p50, 50, 1, { lowerIsBetter: true, unit: 'µs' })
      compare(`outage ${how}: hit p99 while open vs the 50 µs target`, p99, 50, 1, { lowerIsBetter: true, unit: 'µs' })
      compare(`outage ${how}: time to open`, toOpenMs, 1000, undefined, { lowerIsBetter: true, unit: 'ms' })
      if (recoveredMs !== null) compare(`outage ${how}: time to recover vs the 1 s target`, recoveredMs, 1000, 1, { lowerIsBetter: true, unit: 'ms' })
    } finally {
      stopRedis(redis)
    }
  }
}

// --------------------------------------------------------------------------------------------

async function main() {
  const started = new Date()
  const redis = await startRedis()
  const redisVersion = execFileSync('redis-server', ['--version']).toString().trim()
  const client = new Redis(redis.port, '127.0.0.1', { enableAutoPipelining: false })
  console.log(`redis-server pid ${redis.child.pid} on 127.0.0.1:${redis.port}; each figure: ${SECONDS} s after a ${WARMUP_SECONDS} s warm-up (in ${ROUNDS} turns where variants alternate)`)
  try {
    console.log('1. Redis hits, sequential')
    const seq = await alternating(
      { ours: ratelockHit(redis.url, 'bench:seq'), flex: flexibleHit(client, 'bench:seq'), rlr: rateLimitRedisHit(client, 'bench:seq') },
      sequential,
    )
    const seqOurs = record('ratelock Limiter({ url }).hit (gcra)', seq.ours)
    const seqFlex = record('rate-limiter-flexible RateLimiterRedis.consume (ioredis)', seq.flex)
    const seqRlr = record('rate-limit-redis RedisStore.increment (ioredis)', seq.rlr)
    compare('Redis hit, sequential vs rate-limiter-flexible', seqOurs.rate, seqFlex.rate, 1.1)
    compare('Redis hit, sequential vs rate-limit-redis store', seqOurs.rate, seqRlr.rate)

    console.log('1b. Client overhead and tails: each call right after a raw PING, less the server\'s µs')
    const tails = []
    for (const [name, call] of [
      ['ratelock Limiter({ url }).hit (gcra)', ratelockHit(redis.url, 'bench:tails')],
      ['rate-limiter-flexible RateLimiterRedis.consume (ioredis)', flexibleHit(client, 'bench:tails')],
      ['rate-limit-redis RedisStore.increment (ioredis)', rateLimitRedisHit(client, 'bench:tails')],
    ]) {
      const measured = await overhead.measure(name, call, redis.port)
      console.log(`  ${name.padEnd(62)} overhead p50 ${measured.overheadUs(0.5).toFixed(1).padStart(6)} µs   p99 ` +
        `${measured.overheadUs(0.99).toFixed(1).padStart(6)} µs   (call p99 ${measured.callUs(0.99).toFixed(1)}, PING p99 ` +
        `${measured.pingUs(0.99).toFixed(1)}, server ${measured.serverUs.toFixed(1)})`)
      tails.push(measured)
    }
    const runtimeTails = await overhead.measure('ratelock Limiter({ url }).hit (gcra) on the addon\'s runtime',
      await ratelockRuntimeHit(redis.url, 'bench:tails'), redis.port)
    tailTables.push(...overhead.ladderTable([...tails, runtimeTails]))
    const [ourTails, ...peerTails] = tails
    // What a call on the JS thread's socket saves against the addon's runtime (thread hand-offs), the
    // path of cluster and Sentinel URLs; lock calls run there too, written from the JS thread.
    compare('Redis hit, client overhead p50: through the addon\'s runtime (cluster, Sentinel) vs on the JS socket',
      runtimeTails.overheadUs(0.5), ourTails.overheadUs(0.5), undefined, { lowerIsBetter: true, unit: 'µs' })
    for (const [label, fraction] of [['p50', 0.5], ['p99', 0.99]]) {
      const best = peerTails.reduce((a, b) => (b.overheadUs(fraction) < a.overheadUs(fraction) ? b : a))
      compare(`Redis hit, client overhead ${label} vs the best peer's (${best.name})`, ourTails.overheadUs(fraction),
        best.overheadUs(fraction), label === 'p99' ? 1 : undefined, { lowerIsBetter: true, unit: 'µs' })
    }
    compare('Redis hit, sequential p99 latency vs rate-limiter-flexible', ourTails.callUs(0.99), peerTails[0].callUs(0.99), 1,
      { lowerIsBetter: true, unit: 'µs' })
    // What the round trip and the server's work allow: a client of no overhead at all, against the peer as measured.
    const bound = peerTails[0].callUs(0.5) / (ourTails.pingUs(0.5) + ourTails.serverUs)
    compare('Redis hit, sequential: the most a zero-overhead client could reach vs rate-limiter-flexible (p50: its call / (PING + our server µs))',
      bound, 1, undefined, { unit: '×' })

    console.log(`2. Redis hits, ${CONCURRENT} concurrent promises`)
    const conOurs = record('ratelock Limiter({ url }).hit (gcra)', await concurrent(ratelockHit(redis.url, 'bench:con')))
    const conFlex = record('rate-limiter-flexible RateLimiterRedis.consume (ioredis)', await concurrent(flexibleHit(client, 'bench:con')))
    const conRlr = record('rate-limit-redis RedisStore.increment (ioredis)', await concurrent(rateLimitRedisHit(client, 'bench:con')))
    compare(`Redis hit, ${CONCURRENT} concurrent vs rate-limiter-flexible`, conOurs.rate, conFlex.rate, 1)
    compare(`Redis hit, ${CONCURRENT} concurrent vs rate-limit-redis store`, conOurs.rate, conRlr.rate)

    console.log('2b. The same with the ratelock module loaded (ratelock finds it and calls RATELOCK.LIMIT; the peer runs its Lua)')
    const withModule = await startRedis(['--loadmodule', moduleLibrary()])
    const moduleClient = new Redis(withModule.port, '127.0.0.1', { enableAutoPipelining: false })
    try {
      const modSeq = record('ratelock Limiter({ url }).hit (gcra, module), sequential', await sequential(ratelockHit(withModule.url, 'bench:mod-seq')))
      const modSeqFlex = record('rate-limiter-flexible RateLimiterRedis.consume, sequential', await sequential(flexibleHit(moduleClient, 'bench:mod-seq')))
      const modCon = record(`ratelock Limiter({ url }).hit (gcra, module), ${CONCURRENT} concurrent`, await concurrent(ratelockHit(withModule.url, 'bench:mod-con')))
      const modConFlex = record(`rate-limiter-flexible RateLimiterRedis.consume, ${CONCURRENT} concurrent`, await concurrent(flexibleHit(moduleClient, 'bench:mod-con')))
      // The module served ratelock's calls (not limit.lua): at least as many as the two timed loops made.
      const stats = await moduleClient.info('commandstats')
      const served = Number((/cmdstat_RATELOCK\.LIMIT:calls=(\d+)/.exec(stats) || [0, 0])[1])
      const timed = Math.floor((modSeq.rate + modCon.rate) * SECONDS)
      if (served < timed) throw new Error(`the module served ${served} calls, fewer than the ${timed} timed`)
      compare('Redis hit with the module loaded, sequential vs rate-limiter-flexible', modSeq.rate, modSeqFlex.rate)
      compare(`Redis hit with the module loaded, ${CONCURRENT} concurrent vs rate-limiter-flexible`, modCon.rate, modConFlex.rate, 2)
    } finally {
      moduleClient.disconnect()
      stopRedis(withModule)
    }

    console.log('2c. Redis hits over TLS (rediss://, a private CA), sequential')
    // The test kit's TLS server: its certificate, for localhost, signed by a private CA made with openssl.
    const secured = await TestRedisServer.startWithTls()
    const tlsClient = new Redis({ host: 'localhost', port: secured.tlsPort, tls: { ca: secured.caPem }, enableAutoPipelining: false })
    try {
      const tlsHits = await alternating({
        ours: ratelockHit(secured.tlsUrl, 'bench:tls', { tlsRootCa: secured.caPem }),
        runtime: await ratelockRuntimeHit(secured.tlsUrl, 'bench:tls', { tlsRootCa: secured.caPem }),
        flex: flexibleHit(tlsClient, 'bench:tls'),
      }, sequential)
      const tlsOurs = record('ratelock Limiter({ url: rediss }).hit (gcra), node:tls on the JS thread', tlsHits.ours)
      const tlsRuntime = record('ratelock Limiter({ url: rediss }).hit (gcra), rustls on the addon\'s runtime', tlsHits.runtime)
      const tlsFlex = record('rate-limiter-flexible RateLimiterRedis.consume (ioredis over TLS)', tlsHits.flex)
      compare('Redis hit over TLS, sequential vs rate-limiter-flexible (ioredis over TLS)', tlsOurs.rate, tlsFlex.rate)
      compare('Redis hit over TLS, sequential: on the JS thread\'s TLS socket vs through the addon\'s runtime (rustls)',
        tlsOurs.rate, tlsRuntime.rate)
    } finally {
      tlsClient.disconnect()
      await secured.close()
    }

    console.log('3. Express through HTTP (keep-alive)')
    const apps = {
      bare: expressApp(null),
      ratelock: expressApp(ratelockRateLimit({ url: redis.url, rules: RULE, keyGenerator: () => 'bench:express' })),
      peer: expressApp(
        expressRateLimit({
          windowMs: 60_000,
          limit: HUGE,
          keyGenerator: () => 'bench:express',
          standardHeaders: 'draft-7',
          legacyHeaders: true,
          store: new RedisStore({ sendCommand: (command, ...args) => client.call(command, ...args), prefix: 'erl:' }),
        }),
      ),
    }
    // The floor of any Redis-backed limiter's added time: one raw-socket PING per request, made where a
    // limiter makes its call (one request at a time, so one socket serves it).
    const floorSocket = await overhead.RawConnection.open(redis.port)
    apps.floor = expressApp((_req, _res, next) => floorSocket.ping().then(() => next(), next))
    const servers = {}
    for (const [name, app] of Object.entries(apps)) servers[name] = await serve(app)
    const one = await alternating(servers, (server, seconds) => httpRate(server, 1, seconds))
    for (const [name, label] of [['bare', 'Express, no limiter'], ['ratelock', 'Express + ratelock/express'], ['peer', 'Express + express-rate-limit + rate-limit-redis'],
      ['floor', 'Express, no limiter, a raw-socket PING per request (the floor)']]) {
      record(`${label}, 1 connection`, one[name])
    }
    floorSocket.close()
    servers.floor.close()
    delete servers.floor
    const many = {}
    for (const [name, label] of [['bare', 'Express, no limiter'], ['ratelock', 'Express + ratelock/express'], ['peer', 'Express + express-rate-limit + rate-limit-redis']]) {
      many[name] = record(`${label}, ${HTTP_CONNECTIONS} connections`, await httpRate(servers[name], HTTP_CONNECTIONS))
    }
    for (const server of Object.values(servers)) server.close()
    const added = (figure) => (1 / figure.rate - 1 / one.bare.rate) * 1e6
    compare('Express added time per request vs express-rate-limit + rate-limit-redis', added(one.ratelock), added(one.peer), 0.8, { lowerIsBetter: true, unit: 'µs' })
    compare('Express added time over the floor (− a PING per request) vs express-rate-limit + rate-limit-redis',
      added(one.ratelock) - added(one.floor), added(one.peer) - added(one.floor), undefined, { lowerIsBetter: true, unit: 'µs' })
    compare(`Express requests/s, ${HTTP_CONNECTIONS} connections, vs express-rate-limit + rate-limit-redis`, many.ratelock.rate, many.peer.rate)

    console.log('3b. Fastify and Hono through HTTP (keep-alive), one limited route')
    // The physical floor of any limiter's added time: one round trip to the same Redis.
    const roundTrip = record('floor: PING (ioredis), sequential', await sequential(() => client.ping()))
    const roundTripUs = 1e6 / roundTrip.rate
    for (const [label, variants, peer] of [
      ['Fastify', await frameworks.fastifyVariants(redis.url, client, RULE, HUGE), '@fastify/rate-limit (ioredis)'],
      ['Hono', frameworks.honoVariants(redis.url, client, RULE, HUGE), 'hono-rate-limiter (RedisStore over ioredis)'],
    ]) {
      for (const server of Object.values(variants)) await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
      const figures = await alternating(variants, (server, seconds) => httpRate(server, 1, seconds))
      for (const [name, server] of Object.entries(variants)) {
        record(`${label}${name === 'bare' ? ', no limiter' : name === 'ratelock' ? ' + ratelock' : ` + ${peer}`}, 1 connection`, figures[name])
        server.close()
      }
      const addedTo = (figure) => (1 / figure.rate - 1 / figures.bare.rate) * 1e6
      compare(`${label} added time per request vs ${peer}`, addedTo(figures.ratelock), addedTo(figures.peer), 0.5, { lowerIsBetter: true, unit: 'µs' })
      compare(`${label} added time over one round trip (− PING) vs ${peer}`, addedTo(figures.ratelock) - roundTripUs,
        addedTo(figures.peer) - roundTripUs, undefined, { lowerIsBetter: true, unit: 'µs' })
    }

    console.log('4. Lock acquire+release pairs, sequential')
    const locks = await alternating({ ours: ratelockLockPair(redis.url), peer: redlockPair(client) }, sequential)
    const lockOurs = record('ratelock DistributedLock (autoRenew: false)', locks.ours)
    const lockPeer = record('redlock 4 (one Redis, ioredis)', locks.peer)
    compare('Lock acquire+release vs redlock', lockOurs.rate, lockPeer.rate, 1)
    // Where a pair's time goes: the client's own µs (the pair less two PINGs and the server's work) and
    // the server's, each beside redlock's.
    const lockTails = []
    for (const [name, call] of [['ratelock DistributedLock pair', ratelockLockPair(redis.url)], ['redlock pair', redlockPair(client)]]) {
      lockTails.push(await overhead.measure(name, call, redis.port, 2))
    }
    tailTables.push('', ...overhead.ladderTable(lockTails))
    const [ourPair, peerPair] = lockTails
    compare('Lock pair, client overhead p50 (− 2 PINGs − server) vs redlock\'s', ourPair.overheadUs(0.5), peerPair.overheadUs(0.5),
      undefined, { lowerIsBetter: true, unit: 'µs' })
    compare('Lock pair, server µs (INFO commandstats, sequential) vs redlock\'s', ourPair.serverUs, peerPair.serverUs, undefined,
      { lowerIsBetter: true, unit: 'µs' })

    console.log('5. Memory store hits, sequential')
    const [ours, theirs] = memoryHits()
    const syncLimiter = new ratelock.Limiter()
    const memory = await alternating(
      { ours: { call: ours }, peer: { call: theirs }, sync: { call: () => syncLimiter.hitSync('bench:memory-sync', RULE), sync: true } },
      ({ call, sync }, seconds) => (sync ? sequentialSync(call, seconds) : sequential(call, seconds)),
    )
    const memOurs = record('ratelock Limiter() (embedded memory store)', memory.ours)
    const memPeer = record('rate-limiter-flexible RateLimiterMemory.consume', memory.peer)
    compare('Memory store hit vs RateLimiterMemory', memOurs.rate, memPeer.rate)
    const memSync = record('ratelock Limiter.hitSync (memory store, no Promise)', memory.sync)
    compare('Memory store hitSync vs RateLimiterMemory', memSync.rate, memPeer.rate, 1)

    console.log('5b. OpenTelemetry metrics per hit (memory store, an SDK provider)')
    const [metered, sdkAlone] = meteredHits()
    const meteredFigure = record('ratelock Limiter({ metrics }) memory hit', await sequential(metered))
    const sdkFigure = record('the SDK alone: counter.add + histogram.record', await sequential(sdkAlone))
    const addedUs = (1 / meteredFigure.rate - 1 / memOurs.rate) * 1e6
    compare('Metrics added per hit vs the SDK\'s own two recordings', addedUs, 1e6 / sdkFigure.rate, undefined,
      { lowerIsBetter: true, unit: 'µs' })

    console.log('6. WebAssembly core (bindings-wasm) in Node, one key')
    const { Limiter: WasmLimiter } = await import('../../bindings-wasm/node.mjs')
    const wasm = new WasmLimiter()
    const wasmFigure = record('ratelock-wasm Limiter.hit (synchronous)', await sequential(() => wasm.hit('bench:wasm', RULE)))
    compare('WASM decisions/s vs the native addon memory store (Promise API)', wasmFigure.rate, memOurs.rate)
    const wasmFile = path.join(__dirname, '..', '..', 'bindings-wasm', 'pkg', 'ratelock_wasm_bg.wasm')
    const gzipped = zlib.gzipSync(fs.readFileSync(wasmFile), { level: 9 }).length / 1024
    compare('WASM module size, gzipped, vs 150 KB', gzipped, 150, 1, { lowerIsBetter: true, unit: 'KB' })
  } finally {
    client.disconnect()
    stopRedis(redis)
  }
  console.log('7. Outages: onError allow, timeout 250 ms, the server stopped or SIGSTOPped')
  await outages()
  console.log('')
  for (const r of rows) console.log(`${r.name.padEnd(82)} ${r.ours.padStart(14)} ${r.theirs.padStart(14)} ${r.ratio.padStart(6)} ${r.target.padStart(8)} ${r.met.padStart(6)}`)
  writeResults(started, redisVersion)
  console.log(`\nwritten to ${RESULTS}`)
  process.exit(0)
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
