'use strict'
// The README's Node framework examples (examples/node), each run as a user runs it (`node <file>`, in a
// process of its own, on a free loopback port) and driven over real HTTP: /search answers 3×200 then
// 429, /health is never limited; and the README shows each file as it is.

const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const fs = require('node:fs')
const net = require('node:net')
const path = require('node:path')
const { test } = require('node:test')

const ROOT = path.join(__dirname, '..', '..')
const EXAMPLES = path.join(ROOT, 'examples', 'node')
const FILES = ['express_app.js', 'fastify_app.js', 'koa_app.js', 'hono_app.js']

function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

async function healthy(base, child) {
  const deadline = Date.now() + 15_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the example exited with ${child.exitCode}`)
    try {
      if ((await fetch(`${base}/health`)).ok) return
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  throw new Error('the example did not start within 15 s')
}

for (const file of FILES) {
  test(`examples/node/${file}: 3×200, then 429; /health is never limited`, async () => {
    const port = await freePort()
    const env = { ...process.env, PORT: String(port) }
    delete env.REDIS_URL
    const child = spawn(process.execPath, [file], { cwd: EXAMPLES, env, stdio: 'ignore' })
    const base = `http://127.0.0.1:${port}`
    try {
      await healthy(base, child)
      const statuses = []
      for (let i = 0; i < 4; i++) statuses.push((await fetch(`${base}/search`)).status)
      assert.deepEqual(statuses, [200, 200, 200, 429])
      for (let i = 0; i < 5; i++) assert.equal((await fetch(`${base}/health`)).status, 200)
    } finally {
      child.kill('SIGTERM')
    }
  })

  test(`the README shows examples/node/${file} whole`, () => {
    const text = fs.readFileSync(path.join(EXAMPLES, file), 'utf8')
    assert.ok(fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8').includes(text), `README.md must show examples/node/${file}`)
  })
}
