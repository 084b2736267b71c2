'use strict'
// The adapter core's shared vectors (tests/vectors/http) through the Node binding: the native
// HttpOptions, ClientAddress and scopedKey answer exactly what the Rust core answers.

const assert = require('node:assert/strict')
const fs = require('node:fs')
const path = require('node:path')
const { test } = require('node:test')

const native = require('../../bindings-node/lib/native')
const { scopedKey } = require('../../bindings-node/http')

const VECTORS = path.join(__dirname, '..', 'vectors', 'http')
const load = (name) => JSON.parse(fs.readFileSync(path.join(VECTORS, name), 'utf8'))

const pairs = (headers) => {
  const out = []
  for (let at = 0; at < headers.length; at += 2) out.push([headers[at], headers[at + 1]])
  return out
}

for (const c of load('answers.json').cases) {
  test(`answers/${c.name}`, () => {
    const spec = c.options ?? {}
    const options = new native.NativeHttpOptions({
      standardHeaders: spec.standard_headers,
      legacyHeaders: spec.legacy_headers,
      partitionKey: spec.partition_key,
      deniedBody: spec.denied_body,
      statusCode: spec.status_code,
    })
    let answer
    if (c.kind === 'decision') {
      const d = c.decision
      answer = options.answer(c.rules, d.allowed, d.remaining, d.reset_after_us / 1000, d.retry_after_us / 1000,
        d.rule_index, d.degraded ?? false, c.key ?? 'k', c.now_ms)
    } else if (c.kind === 'failure') {
      answer = options.failure(`ERR_RATELOCK_${c.error_code}`)
    } else {
      answer = options.badKey()
    }
    const got = answer === null ? null : {
      proceed: answer.proceed,
      status: answer.status,
      headers: pairs(answer.headers),
      content_type: answer.contentType,
      body: answer.body,
    }
    assert.deepEqual(got, c.expect)
  })
}

for (const c of load('client_keys.json').cases) {
  test(`client keys/${c.name}`, () => {
    const address = new native.NativeClientAddress({
      ipv6Subnet: c.ipv6_subnet,
      trustedProxies: c.trusted_proxies ?? undefined,
      proxyHeader: c.proxy_header,
    })
    assert.equal(address.key(c.peer, c.forwarded), c.expect)
  })
}

test('scoped keys', () => {
  for (const c of load('scoped_keys.json').cases) {
    assert.equal(scopedKey(c.scope, c.key), c.expect)
    assert.deepEqual(scopedKey(c.scope, Buffer.from(c.key)), Buffer.from(c.expect))
  }
})
