'use strict'
// A Node `cluster` of 4 Express workers on one Redis, for process_models.test.js. The primary forks the
// workers and prints `ready <port>` once all of them listen. Routes: `/shared` (ratelock/express with
// one shared limit and key), `/own` (a burst on this worker's own rule: answers the decisions that
// carried another limit, i.e. crossed replies), `/lock` (a DistributedLock round: its fencing token).
// Usage: node cluster-app.js <redis url> <prefix> <shared rules>

const cluster = require('node:cluster')
const express = require('express')

const { DistributedLock, Limiter } = require('../../bindings-node')
const { rateLimit } = require('../../bindings-node/express')

const [url, prefix, sharedRules] = process.argv.slice(2)
const WORKERS = 4

if (cluster.isPrimary) {
  let listening = 0
  let port = 0
  cluster.on('listening', (_worker, address) => {
    port = address.port
    if (++listening === WORKERS) console.log(`ready ${port}`)
  })
  for (let i = 0; i < WORKERS; i++) cluster.fork()
  process.on('SIGTERM', () => {
    for (const worker of Object.values(cluster.workers)) worker.process.kill('SIGKILL')
    process.exit(0)
  })
} else {
  const limiter = new Limiter({ url, prefix })
  const lock = new DistributedLock(`${prefix}:lock`, { url, ttlMs: 10000 })
  const app = express()
  app.get('/shared', rateLimit({ limiter, rules: sharedRules, keyGenerator: () => 'shared' }), (_req, res) =>
    res.json({ pid: process.pid }),
  )
  app.get('/own', async (_req, res) => {
    const limit = 1000 + (process.pid % 5000)
    const crossed = []
    for (let i = 0; i < 20; i++) {
      try {
        const decision = await limiter.hit(`own:${process.pid}`, `${limit}/hour`)
        if (decision.limit !== limit) crossed.push(`limit ${decision.limit} for a rule of ${limit}`)
      } catch (error) {
        crossed.push(`${error.name}: ${error.message}`)
      }
    }
    res.json({ crossed, pid: process.pid })
  })
  app.get('/lock', async (_req, res) => {
    const token = await lock.using(() => lock.fencingToken)
    res.json({ token, pid: process.pid })
  })
  // Workers share the port through the primary (cluster's round-robin).
  app.listen(Number(process.env.RATELOCK_TEST_PORT), '127.0.0.1')
}
