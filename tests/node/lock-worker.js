'use strict'
// A lock contender for locks.test.js, run as a child process: takes the lock `rounds` times and,
// while holding it, acts on a shared "resource" file that accepts a write only with a fencing token
// above every token it saw. Prints one JSON line: its grants, tokens, and any violation it noticed.

const fs = require('node:fs')
const { DistributedLock } = require('../../bindings-node')

const [url, name, resource, rounds] = process.argv.slice(2)

async function main() {
  const lock = new DistributedLock(name, { url, ttlMs: 5000 })
  const tokens = []
  const violations = []
  for (let round = 0; round < Number(rounds); round++) {
    await lock.using(async () => {
      const token = lock.fencingToken
      const seen = JSON.parse(fs.readFileSync(resource, 'utf8'))
      if (token <= seen.token) violations.push(`token ${token} not above ${seen.token}`)
      fs.writeFileSync(resource, JSON.stringify({ token, pid: process.pid }))
      await new Promise((resolve) => setTimeout(resolve, 2))
      const after = JSON.parse(fs.readFileSync(resource, 'utf8'))
      if (after.pid !== process.pid) violations.push(`pid ${after.pid} wrote while ${process.pid} held the lock`)
      tokens.push(token)
    })
  }
  process.stdout.write(`${JSON.stringify({ pid: process.pid, tokens, violations })}\n`)
}

main().catch((error) => {
  process.stdout.write(`${JSON.stringify({ error: `${error.name}: ${error.message}` })}\n`)
  process.exitCode = 1
})
