'use strict'
// Every adapter in both languages, each in its real server over real HTTP: Flask (gunicorn), Starlette
// and FastAPI (uvicorn), Django (gunicorn and uvicorn), Express, Fastify, Koa and Hono (Node's http
// server). The same route driven the same way gives the same statuses, headers and bodies, byte for byte;
// and a Python app and a Node app on one Redis share one limit exactly. The Python apps are
// tests/python/adapter_apps, the Node ones tests/node/adapter-apps.js.

const assert = require('node:assert/strict')
const { spawn } = require('node:child_process')
const net = require('node:net')
const path = require('node:path')
const { randomUUID } = require('node:crypto')
const { after, before, test } = require('node:test')

const { FRAMEWORKS: NODE_FRAMEWORKS, serve } = require('../node/adapter-apps')
const { RedisServer } = require('../node/redis-server')
const { Limiter } = require('../../bindings-node')

process.env.RATELOCK_QUIET = '1'

const ROOT = path.join(__dirname, '..', '..')
const BIN = path.join(ROOT, '.venv', 'bin')
const PYTHON_APPS = path.join(ROOT, 'tests', 'python')
const PYTHON_FRAMEWORKS = {
  flask: ['gunicorn', 'adapter_apps.flask_app:app', {}],
  starlette: ['uvicorn', 'adapter_apps.starlette_app:app', {}],
  fastapi: ['uvicorn', 'adapter_apps.fastapi_app:app', {}],
  'django-wsgi': ['gunicorn', 'adapter_apps.django_app:application', {}],
  'django-asgi': ['uvicorn', 'adapter_apps.django_app:application', { RATELOCK_DJANGO_ASYNC: '1' }],
}
/** The rate-limit headers every response is compared by (and, for a refusal, its content type). */
const COMPARED = ['ratelimit', 'ratelimit-policy', 'retry-after', 'x-ratelimit-limit', 'x-ratelimit-remaining']

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

function freePort() {
  return new Promise((resolve) => {
    const server = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address()
      server.close(() => resolve(port))
    })
  })
}

async function accepting(port, child) {
  const deadline = Date.now() + 20_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`the server exited with ${child.exitCode}`)
    const open = await new Promise((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.end(() => resolve(true)))
      socket.once('error', () => resolve(false))
    })
    if (open) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`nothing listened on ${port} within 20 s`)
}

/** A Python framework's app in its real server; resolves to `{ base, close }`. */
async function servePython(framework, env) {
  const [program, app, own] = PYTHON_FRAMEWORKS[framework]
  const port = await freePort()
  const args = program === 'gunicorn'
    ? ['-w', '1', '-b', `127.0.0.1:${port}`, '--log-level', 'warning', app]
    : [app, '--host', '127.0.0.1', '--port', String(port), '--log-level', 'warning', '--no-proxy-headers']
  const child = spawn(path.join(BIN, program), args, {
    cwd: PYTHON_APPS,
    env: { ...process.env, PYTHONPATH: PYTHON_APPS, ...own, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  await accepting(port, child)
  return {
    base: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => {
      child.once('exit', resolve)
      child.kill('SIGTERM')
    }),
  }
}

/** The settings of a Node app from the environment a Python app is given. */
const nodeSettings = (env) => ({
  url: env.RATELOCK_URL,
  prefix: env.RATELOCK_PREFIX,
  deniedBody: env.RATELOCK_DENIED_BODY,
  legacyHeaders: env.RATELOCK_LEGACY_HEADERS === '1',
})

/** Every adapter's app, each given the environment `envOf` answers for its framework. */
async function startAll(envOf) {
  const apps = {}
  for (const framework of Object.keys(PYTHON_FRAMEWORKS)) apps[framework] = await servePython(framework, envOf(framework))
  for (const framework of NODE_FRAMEWORKS) apps[framework] = await serve(framework, nodeSettings(envOf(framework)))
  return apps
}

/** A response as compared: its status, the compared headers, and the body of a refusal (an allowed
 * response's body and content type are the app's own). */
async function seen(base, path) {
  const response = await fetch(`${base}${path}`)
  const body = await response.text()
  return {
    status: response.status,
    headers: Object.fromEntries(COMPARED.map((name) => [name, response.headers.get(name)])),
    refusal: response.status === 200 ? null : { contentType: response.headers.get('content-type'), body },
  }
}

for (const [label, env] of [
  ['the default answers', {}],
  ['problem bodies with legacy headers', { RATELOCK_DENIED_BODY: 'problem', RATELOCK_LEGACY_HEADERS: '1' }],
]) {
  test(`all nine adapters agree header for header: ${label}`, { timeout: 120_000 }, async () => {
    const apps = await startAll(() => env)
    try {
      const runs = {}
      for (const [framework, app] of Object.entries(apps)) {
        runs[framework] = []
        for (let i = 0; i < 4; i++) runs[framework].push(await seen(app.base, '/search'))
      }
      const [first, ...others] = Object.keys(runs)
      assert.deepEqual(runs[first].map((r) => r.status), [200, 200, 200, 429])
      assert.equal(runs[first][3].headers['retry-after'], '1200')
      for (const framework of others) assert.deepEqual(runs[framework], runs[first], `${framework} differs from ${first}`)
      assert.ok(runs[first][3].refusal.body.length > 0)
      // A rule's ban: the denial that starts it and the one after answer alike, waiting out the ban.
      const bans = {}
      for (const [framework, app] of Object.entries(apps)) {
        bans[framework] = []
        for (let i = 0; i < 4; i++) bans[framework].push(await seen(app.base, '/ban'))
      }
      assert.deepEqual(bans[first].map((r) => r.status), [200, 200, 429, 429])
      assert.deepEqual(bans[first].slice(2).map((r) => r.headers['retry-after']), ['600', '600'])
      for (const framework of others) assert.deepEqual(bans[framework], bans[first], `${framework} differs from ${first}`)
    } finally {
      for (const app of Object.values(apps)) await app.close()
    }
  })
}

test('a deny-listed client is refused, and a shadowed route passes, alike in all nine adapters', { timeout: 120_000 }, async () => {
  // One Redis, a prefix per app: the test puts each app's client on that prefix's deny list.
  const run = randomUUID().slice(0, 8)
  const prefixOf = (framework) => `policy${run}${framework}`
  const apps = await startAll((framework) => ({ RATELOCK_URL: redis.url, RATELOCK_PREFIX: prefixOf(framework) }))
  try {
    const denied = {}
    const shadowed = {}
    for (const [framework, app] of Object.entries(apps)) {
      const lists = new Limiter({ url: redis.url, prefix: prefixOf(framework) })
      await lists.deny('search:127.0.0.1', 600_000)
      denied[framework] = [await seen(app.base, '/search'), await seen(app.base, '/search')]
      shadowed[framework] = []
      for (let i = 0; i < 4; i++) shadowed[framework].push(await seen(app.base, '/shadow'))
    }
    const [first, ...others] = Object.keys(apps)
    assert.deepEqual(denied[first].map((r) => r.status), [429, 429], 'the deny list refuses the first request')
    assert.deepEqual(denied[first].map((r) => r.headers['retry-after']), ['600', '600'])
    assert.ok(denied[first][0].refusal.body.length > 0)
    assert.deepEqual(shadowed[first].map((r) => r.status), [200, 200, 200, 200], 'a shadow rule lets every request through')
    assert.match(shadowed[first][3].headers.ratelimit, /\br=0\b|remaining=0/, 'and its headers say what enforcement would')
    for (const framework of others) {
      assert.deepEqual(denied[framework], denied[first], `${framework} differs from ${first} on the deny list`)
      assert.deepEqual(shadowed[framework], shadowed[first], `${framework} differs from ${first} in shadow`)
    }
  } finally {
    for (const app of Object.values(apps)) await app.close()
  }
})

test('a Python app and a Node app on one Redis share one limit exactly', { timeout: 60_000 }, async () => {
  const env = { RATELOCK_URL: redis.url, RATELOCK_PREFIX: `share${randomUUID().slice(0, 8)}` }
  const flask = await servePython('flask', env)
  const fastapi = await servePython('fastapi', env)
  const express = await serve('express', nodeSettings(env))
  const hono = await serve('hono', nodeSettings(env))
  try {
    const order = [flask, express, fastapi, hono, flask, express]
    const statuses = []
    for (const app of order) statuses.push((await fetch(`${app.base}/search`)).status)
    assert.deepEqual(statuses, [200, 200, 200, 429, 429, 429])
    const last = await seen(hono.base, '/tenant?plan=free')
    const again = await seen(flask.base, '/tenant?plan=free')
    assert.deepEqual([last.status, again.status], [200, 200])
    assert.equal((await seen(express.base, '/tenant?plan=free')).status, 429, 'a key from the request, shared too')
  } finally {
    for (const app of [flask, fastapi, express, hono]) await app.close()
  }
})
