'use strict'
// OpenTelemetry metrics from Node (ratelock/otel) through the SDK's in-memory exporter, after real
// calls on a real redis-server and on the memory store: decisions by outcome, reason, rule and route,
// round trips, store errors, lock waits, holds and losses; keys never among the attributes; the global
// meter provider when none is given.

const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const { randomUUID } = require('node:crypto')
const path = require('node:path')
const { after, before, test } = require('node:test')
const {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} = require('@opentelemetry/sdk-metrics')

const ratelock = require('../../bindings-node')
const { Metrics } = require('../../bindings-node/otel')
const { RedisServer } = require('./redis-server')

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

const fresh = (name) => `${name}:${randomUUID()}`
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** A meter provider whose reader exports to memory on demand. */
function inMemory() {
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
  const provider = new MeterProvider({ readers: [reader] })
  /** Every data point of `name`, after the queued measurements are recorded: [attributes, value]. */
  const points = async (name) => {
    await sleep(20) // measurements are queued to this thread: let them run
    await reader.forceFlush()
    const found = []
    for (const resource of exporter.getMetrics()) {
      for (const scope of resource.scopeMetrics) {
        for (const metric of scope.metrics) {
          if (metric.descriptor.name !== name) continue
          for (const point of metric.dataPoints) {
            const value = typeof point.value === 'number' ? point.value : point.value.count
            found.push([point.attributes, value])
          }
        }
      }
    }
    exporter.reset()
    return found
  }
  return { metrics: new Metrics({ meterProvider: provider }), points }
}

const total = (points, wanted) =>
  points
    .filter(([attributes]) => Object.entries(wanted).every(([name, value]) => attributes[name] === value))
    .reduce((sum, [, value]) => sum + value, 0)

test('decisions, round trips and routes from a Redis limiter', async () => {
  const { metrics, points } = inMemory()
  const limiter = new ratelock.Limiter({ url: redis.url, metrics })
  const key = fresh('user:secret')
  for (let i = 0; i < 3; i++) await limiter.hit(key, '2/minute')
  await limiter.peek(key, '2/minute')
  const banned = fresh('banned')
  await limiter.block(banned, 60_000)
  await limiter.hit(banned, '2/minute')
  const byScript = new ratelock.Limiter({ url: `${redis.url}?server_code=scripts`, metrics })
  await byScript.hit(fresh('other'), '3/minute')

  const [decisions, roundTrips] = await Promise.all([points('ratelock.decisions'), points('ratelock.store.duration')])
  assert.equal(total(decisions, { outcome: 'allowed', operation: 'hit', rule: 'g2/60000', store: 'redis' }), 2)
  assert.equal(total(decisions, { outcome: 'denied', reason: 'rule' }), 2)
  assert.equal(total(decisions, { operation: 'peek' }), 1)
  assert.equal(total(decisions, { outcome: 'denied', reason: 'ban' }), 1)
  assert.equal(total(decisions, { rule: 'g3/60000', route: 'evalsha' }), 1, JSON.stringify(decisions))
  assert.equal(total(decisions, { store: 'redis' }), 6)
  assert.equal(total(roundTrips, { store: 'redis', operation: 'hit' }), 5, 'each call timed on the wire path too')
  assert.equal(total(roundTrips, { store: 'redis', operation: 'peek' }), 1)
  for (const [attributes] of decisions) {
    assert.ok(!Object.values(attributes).some((value) => String(value).includes('secret')), 'no key is an attribute')
    // Each call says the route it went by: EVALSHA until the connection's check of the server is done.
    assert.ok(['fcall', 'evalsha'].includes(attributes.route), JSON.stringify(attributes))
  }
  let byFunction = 0
  for (let i = 0; i < 50 && byFunction === 0; i++) {
    await limiter.peek(key, '2/minute')
    byFunction = total(await points('ratelock.decisions'), { route: 'fcall' })
  }
  assert.ok(byFunction > 0, 'once the check is done, calls go by FCALL (Redis 7)')
})

test('histograms have buckets for seconds, and counters units', async () => {
  // With no advice the SDK used its default boundaries (0, 5, 10 ... 10000), made for milliseconds: every
  // round trip, of well under a millisecond here, fell into the one bucket (0, 5 s].
  const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
  const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 })
  const metrics = new Metrics({ meterProvider: new MeterProvider({ readers: [reader] }) })
  const limiter = new ratelock.Limiter({ url: redis.url, metrics })
  for (let i = 0; i < 20; i++) await limiter.hit(fresh('user'), '10/minute')
  await sleep(20)
  await reader.forceFlush()
  const found = new Map(exporter.getMetrics().flatMap((resource) => resource.scopeMetrics.flatMap((scope) => scope.metrics)).map((metric) => [metric.descriptor.name, metric]))
  const roundTrips = found.get('ratelock.store.duration')
  // One data point per route: the first calls go by EVALSHA, until the connection's check is done.
  let timed = 0
  for (const point of roundTrips.dataPoints) {
    const { boundaries, counts } = point.value.buckets
    assert.ok(boundaries[0] > 0 && boundaries[0] < 0.001 && boundaries.at(-1) >= 1, JSON.stringify(boundaries))
    timed += counts.reduce((sum, count) => sum + count, 0)
  }
  assert.equal(timed, 20)
  assert.equal(roundTrips.descriptor.unit, 's')
  assert.equal(found.get('ratelock.decisions').descriptor.unit, '{decision}')
})

test('the memory store in shadow, and an outage counted as a store error', async () => {
  const { metrics, points } = inMemory()
  const shadow = new ratelock.Limiter({ shadow: true, metrics })
  const key = fresh('k')
  await shadow.hit(key, '1/minute')
  assert.equal((await shadow.hit(key, '1/minute')).allowed, true)
  const decisions = await points('ratelock.decisions')
  assert.equal(total(decisions, { outcome: 'would_deny', store: 'memory' }), 1)
  assert.equal(total(decisions, { outcome: 'allowed', store: 'memory' }), 1)

  const server = await RedisServer.start()
  const limiter = new ratelock.Limiter({ url: server.url, metrics, timeoutMs: 500 })
  await limiter.hit(fresh('k'), '5/second')
  await server.close()
  await assert.rejects(limiter.hit(fresh('k'), '5/second'))
  assert.ok(total(await points('ratelock.store.errors'), { store: 'redis' }) >= 1)
})

test('lock waits, holds and losses', async () => {
  const { metrics, points } = inMemory()
  const name = fresh('job')
  const lock = new ratelock.DistributedLock(name, { url: redis.url, ttlMs: 600, metrics })
  await lock.acquire()
  await lock.release()
  const operator = new ratelock.DistributedLock(name, { url: redis.url })
  await assert.rejects(
    lock.using(async (signal) => {
      await operator.forceRelease()
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
    }),
    ratelock.LockLostError,
  )
  const seats = new ratelock.Semaphore(fresh('pool'), 2, { url: redis.url, metrics })
  await (await seats.acquire()).release()

  const waits = await points('ratelock.lock.wait.duration')
  assert.equal(total(waits, { kind: 'lock', outcome: 'granted' }), 2, JSON.stringify(waits))
  assert.equal(total(waits, { kind: 'permit', outcome: 'granted' }), 1, JSON.stringify(waits))
  const held = await points('ratelock.lock.held.duration')
  assert.equal(total(held, { outcome: 'released' }), 2, JSON.stringify(held))
  assert.equal(total(held, { outcome: 'lost' }), 1, JSON.stringify(held))
  assert.equal(total(await points('ratelock.lock.lost'), { kind: 'lock' }), 1)
})

test('a bad metrics option is named', () => {
  assert.throws(() => new ratelock.Limiter({ metrics: 'prometheus' }), /`metrics`/)
  assert.throws(() => new ratelock.DistributedLock('x', { metrics: 3 }), /`metrics`/)
  // Without a provider, the API is needed, and the package does not carry it: the error says so.
  assert.throws(() => new Metrics(), /npm install @opentelemetry\/api/)
})

test('with no provider given, Metrics records to the global one', () => {
  const script = `
    const { metrics } = require('@opentelemetry/api')
    const { InMemoryMetricExporter, AggregationTemporality, MeterProvider, PeriodicExportingMetricReader } = require('@opentelemetry/sdk-metrics')
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE)
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3600000 })
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }))
    const ratelock = require(${JSON.stringify(path.resolve(__dirname, '../../bindings-node'))})
    const { Metrics } = require(${JSON.stringify(path.resolve(__dirname, '../../bindings-node/otel'))})
    const limiter = new ratelock.Limiter({ metrics: new Metrics() })
    limiter.hit('k', '1/minute').then(() => new Promise((r) => setTimeout(r, 20))).then(() => reader.forceFlush()).then(() => {
      const names = exporter.getMetrics().flatMap((r) => r.scopeMetrics.flatMap((s) => s.metrics.map((m) => m.descriptor.name)))
      console.log(names.join(','))
    })`
  // ratelock/otel finds @opentelemetry/api where the application has it (here: the tests' packages).
  const env = { ...process.env, NODE_PATH: path.join(__dirname, 'node_modules') }
  const run = spawnSync(process.execPath, ['-e', script], { env, encoding: 'utf8', timeout: 20_000 })
  assert.equal(run.status, 0, run.stderr)
  assert.match(run.stdout, /ratelock\.decisions/)
})

test('a recorder that throws is a process warning, never an uncaught exception', async () => {
  // Thrown to the event loop, it was the process's uncaughtException: the service stopped.
  const script = `
    const ratelock = require('ratelock')
    process.on('warning', (warning) => { if (warning.code === 'RATELOCK_METRICS_FAILED') console.log('warned:', warning.message) })
    const limiter = new ratelock.Limiter({ metrics: () => { throw new Error('exporter down') } })
    ;(async () => {
      for (let i = 0; i < 50; i++) await limiter.hit('k', '100/second')
      await new Promise((resolve) => setTimeout(resolve, 50))
      console.log('still running')
    })()
  `
  const ran = spawnSync(process.execPath, ['-e', script], { cwd: __dirname, encoding: 'utf8', timeout: 30_000 })
  assert.equal(ran.status, 0, ran.stderr)
  assert.match(ran.stdout, /still running/)
  const warnings = ran.stdout.split('\n').filter((line) => line.startsWith('warned:'))
  assert.equal(warnings.length, 1, ran.stdout)
  assert.match(warnings[0], /recording ratelock\.\S+ failed: Error: exporter down/)
})

test('measurements beyond the queue to this thread are dropped, counted and warned of, never piled up', async () => {
  // A loop of hitSync calls that never yields queues each call's measurements with nothing to take
  // them: past the addon's bound they are dropped, and the next one handed over says how many.
  let recorded = 0
  const limiter = new ratelock.Limiter({ metrics: () => recorded++ })
  const warned = []
  const onWarning = (warning) => {
    if (warning.code === 'RATELOCK_METRICS_DROPPED') warned.push(warning.message)
  }
  process.on('warning', onWarning)
  const calls = 150_000
  for (let i = 0; i < calls; i++) limiter.hitSync(`flood:${i % 100}`, '1000000/second')
  // The queued ones run (until the count stops growing); then one more measurement carries the count.
  for (let seen = -1; seen !== recorded; await sleep(100)) seen = recorded
  const queued = recorded
  limiter.hitSync('flood:last', '1000000/second')
  const deadline = Date.now() + 10_000
  for (let seen = -1; (seen !== recorded || warned.length === 0) && Date.now() < deadline; await sleep(50)) seen = recorded
  process.off('warning', onWarning)
  assert.ok(queued <= 100_000, `${queued} measurements piled up`)
  assert.equal(warned.length, 1, warned.join('\n'))
  const dropped = Number(warned[0].match(/^(\d+) measurements were dropped/)[1])
  assert.ok(queued + dropped >= calls, `${queued} recorded and ${dropped} dropped of ${calls} calls' measurements`)
})
