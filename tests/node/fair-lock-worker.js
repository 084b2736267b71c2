'use strict'
// A FairLock waiter for fair_rw_locks.test.js, run as a child process: queues for the lock on Redis,
// and once granted prints one JSON line (its label, pid and fencing token), holds briefly, releases.

const { FairLock } = require('../../bindings-node')

const [url, name, label] = process.argv.slice(2)

async function main() {
  const lock = new FairLock(name, { url, ttlMs: 5000, waiterTtlMs: 2000 })
  const hold = await lock.acquire({ timeoutMs: 30_000 })
  process.stdout.write(`${JSON.stringify({ label: Number(label), pid: process.pid, token: hold.fencingToken })}\n`)
  await new Promise((resolve) => setTimeout(resolve, 20))
  await hold.release()
}

main().catch((error) => {
  process.stdout.write(`${JSON.stringify({ error: `${error.name}: ${error.message}` })}\n`)
  process.exitCode = 1
})
