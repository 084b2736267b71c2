'use strict'
// Node process models on a real redis-server: a `cluster` of 4 Express workers sharing one limit over
// real HTTP, and `worker_threads` with one Limiter per thread. Exact admission across workers and
// threads, every request answered in time, no crossed reply (a decision carrying another worker's
// rule, or an error), locks included; threads end and let the process exit.

const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const { randomUUID } = require('node:crypto')
const fs = require('node:fs')
const http = require('node:http')
const path = require('node:path')
const { Worker } = require('node:worker_threads')
const { after, before, test } = require('node:test')

const { RedisServer } = require('./redis-server')

const LIMIT = 50
const REQUEST_TIMEOUT_MS = 10000

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

function get(port, route) {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: route, agent: false }, (response) => {
      let body = ''
      response.on('data', (chunk) => (body += chunk))
      response.on('end', () => {
        const json = String(response.headers['content-type']).includes('json')
        resolve({ status: response.statusCode, body: json ? JSON.parse(body) : {}, ms: performance.now() - started })
      })
    })
    request.setTimeout(REQUEST_TIMEOUT_MS, () => request.destroy(new Error(`${route} timed out`)))
    request.on('error', reject)
  })
}

/** Runs `jobs` with at most `width` in flight. */
async function pooled(jobs, width) {
  const results = new Array(jobs.length)
  let next = 0
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < jobs.length) {
        const at = next++
        results[at] = await jobs[at]()
      }
    }),
  )
  return results
}

test('a cluster of 4 Express workers shares one limit exactly, with no crossed reply', async () => {
  const prefix = `nc${randomUUID().slice(0, 8)}`
  const port = await new Promise((resolve) => {
    const probe = require('node:net').createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address()
      probe.close(() => resolve(port))
    })
  })
  const primary = spawn(process.execPath, [path.join(__dirname, 'cluster-app.js'), redis.url, prefix, `${LIMIT}/hour`], {
    env: { ...process.env, RATELOCK_TEST_PORT: String(port) },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  try {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the cluster did not start in 30 s')), 30000)
      primary.stdout.on('data', (chunk) => {
        if (String(chunk).includes('ready')) {
          clearTimeout(timer)
          resolve()
        }
      })
      primary.once('exit', (code) => reject(new Error(`the primary exited with ${code}`)))
    })
    const routes = [...Array(120).fill('/shared'), ...Array(40).fill('/own'), ...Array(40).fill('/lock')]
    const answers = await pooled(
      routes.map((route) => async () => ({ route, ...(await get(port, route)) })),
      16,
    )
    const admitted = answers.filter((a) => a.route === '/shared' && a.status === 200).length
    const failed = answers.filter((a) => a.status !== 200 && a.status !== 429)
    const crossed = answers.filter((a) => a.route === '/own').flatMap((a) => a.body.crossed)
    const tokens = answers.filter((a) => a.route === '/lock').map((a) => a.body.token)
    const workers = new Set(answers.map((a) => a.body.pid).filter((pid) => pid !== undefined)).size
    const slowest = Math.max(...answers.map((a) => a.ms))
    console.log(
      `process model ${JSON.stringify({ model: 'node cluster, 4 Express workers', requests: routes.length, calls: 120 + 40 * 20 + 40, admitted, crossed: crossed.length, workers, slowest_ms: Math.round(slowest) })}`,
    )
    assert.deepEqual(failed, [])
    assert.deepEqual(crossed, [])
    assert.equal(admitted, LIMIT, 'exactly the limit across the workers')
    assert.equal(new Set(tokens).size, 40, 'every lock grant its own token')
    assert.ok(workers >= 2, 'the load reached several workers')
    assert.ok(slowest < REQUEST_TIMEOUT_MS)
  } finally {
    primary.kill('SIGTERM')
    await new Promise((resolve) => (primary.exitCode !== null ? resolve() : primary.once('exit', resolve)))
  }
})

function runThreads(url, prefix, threads, work = { shared: 30, own: 100, locks: 10 }) {
  return Promise.all(
    Array.from(
      { length: threads },
      (_, index) =>
        new Promise((resolve, reject) => {
          const worker = new Worker(path.join(__dirname, 'thread-worker.js'), {
            workerData: { url, prefix, sharedRules: `${LIMIT}/hour`, index, ...work },
          })
          let result = null
          worker.once('message', (message) => (result = message))
          worker.once('error', reject)
          // The thread must end on its own once its work is done (nothing may keep it alive).
          const timer = setTimeout(() => reject(new Error(`thread ${index} did not exit`)), 20000)
          worker.once('exit', () => {
            clearTimeout(timer)
            if (result === null || result.error) reject(new Error(result?.error ?? 'no result'))
            else resolve(result)
          })
        }),
    ),
  )
}

test('worker_threads with one Limiter each share one Redis limit exactly, with no crossed reply', async () => {
  const prefix = `nt${randomUUID().slice(0, 8)}`
  const results = await runThreads(redis.url, prefix, 4)
  const admitted = results.reduce((sum, r) => sum + r.admitted, 0)
  const crossed = results.flatMap((r) => r.crossed)
  const tokens = results.flatMap((r) => r.tokens)
  console.log(
    `process model ${JSON.stringify({ model: 'node worker_threads x4 (redis)', calls: 4 * (30 + 100 + 10), admitted, crossed: crossed.length })}`,
  )
  assert.deepEqual(crossed, [])
  assert.equal(admitted, LIMIT)
  assert.equal(new Set(tokens).size, 40)
})

// The addon's stores are the process's, and outlive the threads that made them. This test file never
// loads the addon itself, so between rounds no Node environment holds it: the store the first round
// made must still work for the second (it did not while the stores' connections ran on napi-rs's
// runtime, which is shut down when the last environment that loaded the addon exits).
test('worker_threads: a second round of threads, after every thread that loaded the addon exited, works on the same stores', async () => {
  assert.ok(
    !Object.keys(require.cache).some((file) => file.includes('bindings-node')),
    'the main thread must not load the addon for this test to mean anything',
  )
  const prefix = `nr${randomUUID().slice(0, 8)}`
  const work = { shared: 5, own: 10, locks: 3 }
  const rounds = []
  for (let round = 0; round < 3; round++) rounds.push(await runThreads(redis.url, prefix, 2, work))
  const tokens = rounds.flat().flatMap((r) => r.tokens)
  assert.equal(new Set(tokens).size, 3 * 2 * 3, 'every lock grant of every round its own token')
  assert.deepEqual(
    rounds.flat().flatMap((r) => r.crossed),
    [],
  )
})

test("the addon's runtime threads leave the host's stop signals to its own threads", async () => {
  // A signal sent to the process is handled on any thread that does not block it; a native handler
  // that ends the process where it lands must never run on the addon's runtime thread.
  const { Limiter } = require('../../bindings-node')
  const limiter = new Limiter({ url: redis.url })
  await limiter.hit('signals', '10/second')
  let checked = 0
  for (const task of fs.readdirSync('/proc/self/task')) {
    let status
    try {
      // A thread may end between the listing and the read (idle blocking-pool threads do).
      if (fs.readFileSync(`/proc/self/task/${task}/comm`, 'utf8').trim() !== 'ratelock') continue
      status = fs.readFileSync(`/proc/self/task/${task}/status`, 'utf8')
    } catch (error) {
      if (error.code === 'ENOENT' || error.code === 'ESRCH') continue
      throw error
    }
    const blocked = BigInt(`0x${status.match(/^SigBlk:\s*([0-9a-f]+)$/m)[1]}`)
    for (const [name, number] of [['SIGHUP', 1], ['SIGINT', 2], ['SIGQUIT', 3], ['SIGTERM', 15], ['SIGCHLD', 17]]) {
      assert.notEqual(blocked & (1n << BigInt(number - 1)), 0n, `thread ${task} does not block ${name}`)
    }
    checked += 1
  }
  assert.ok(checked > 0, 'no ratelock runtime thread found')
})
