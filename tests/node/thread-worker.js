'use strict'
// One worker_threads thread of process_models.test.js: its own Limiter and lock on the given store,
// hits of the shared limit, a burst on its own rule, lock rounds; posts what it saw.

const { parentPort, workerData } = require('node:worker_threads')

const { DistributedLock, Limiter } = require('../../bindings-node')

async function main() {
  const { url, prefix, sharedRules, index, shared, own, locks } = workerData
  const limiter = new Limiter({ url, prefix })
  const lock = new DistributedLock(`${prefix}:lock`, { url, ttlMs: 10000 })
  let admitted = 0
  for (let i = 0; i < shared; i++) if ((await limiter.hit('shared', sharedRules)).allowed) admitted++
  const limit = 2000 + index
  const crossed = []
  await Promise.all(
    Array.from({ length: own }, async () => {
      try {
        const decision = await limiter.hit(`own:${index}`, `${limit}/hour`)
        if (decision.limit !== limit) crossed.push(`limit ${decision.limit} for a rule of ${limit}`)
      } catch (error) {
        crossed.push(`${error.name}: ${error.message}`)
      }
    }),
  )
  const tokens = []
  for (let i = 0; i < locks; i++) tokens.push(await lock.using(() => lock.fencingToken))
  parentPort.postMessage({ admitted, crossed, tokens })
}

main().catch((error) => parentPort.postMessage({ error: `${error.name}: ${error.message}` }))
