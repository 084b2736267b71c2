// The adapter core's shared vectors (tests/vectors/http) against the WebAssembly build under Node:
// HttpOptions, ClientAddress and scopedKey answer exactly what the Rust core answers.
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'

import { ClientAddress, HttpOptions, Limiter, scopedKey } from '../../bindings-wasm/node.mjs'

const VECTORS = new URL('../vectors/http/', import.meta.url)
const load = (name) => JSON.parse(readFileSync(new URL(name, VECTORS), 'utf8'))

const pairs = (headers) => {
  const out = []
  for (let at = 0; at < headers.length; at += 2) out.push([headers[at], headers[at + 1]])
  return out
}

for (const c of load('answers.json').cases) {
  test(`answers/${c.name}`, () => {
    const spec = c.options ?? {}
    const options = new HttpOptions({
      standardHeaders: spec.standard_headers,
      legacyHeaders: spec.legacy_headers,
      partitionKey: spec.partition_key,
      deniedBody: spec.denied_body,
      statusCode: spec.status_code,
    })
    let answer
    if (c.kind === 'decision') {
      const d = c.decision
      const decision = {
        allowed: d.allowed, limit: d.limit, remaining: d.remaining, resetAfterMs: d.reset_after_us / 1000,
        retryAfterMs: d.retry_after_us / 1000, ruleIndex: d.rule_index, degraded: d.degraded ?? false,
      }
      answer = options.answer(c.rules, decision, c.key ?? 'k', c.now_ms)
    } else if (c.kind === 'failure') {
      answer = options.failure(c.error_code)
    } else {
      answer = options.badKey()
    }
    const got = answer === null ? null : {
      proceed: answer.proceed, status: answer.status, headers: pairs(answer.headers),
      content_type: answer.contentType, body: answer.body,
    }
    assert.deepEqual(got, c.expect)
  })
}

for (const c of load('client_keys.json').cases) {
  test(`client keys/${c.name}`, () => {
    const address = new ClientAddress({
      ipv6Subnet: c.ipv6_subnet, trustedProxies: c.trusted_proxies ?? undefined, proxyHeader: c.proxy_header,
    })
    assert.equal(address.key(c.peer, c.forwarded ?? undefined), c.expect)
  })
}

test('scoped keys', () => {
  for (const c of load('scoped_keys.json').cases) assert.equal(scopedKey(c.scope, c.key), c.expect)
})

test('the headers name the limit the store decided on, and a bad decision is refused by name', () => {
  // An override's limit (100 for a 10/minute rule) was answered as the rule's own: q=10 beside r=99.
  const limiter = new Limiter()
  limiter.setOverride('t', '100/minute')
  const decision = limiter.hit('t', '10/minute')
  assert.equal(decision.limit, 100)
  const options = new HttpOptions({})
  const headers = options.answer('10/minute', decision, 't').headers
  assert.match(headers[headers.indexOf('RateLimit-Policy') + 1], /;q=100;/, JSON.stringify(headers))
  for (const [call, message] of [
    [() => options.answer('10/minute', { ...decision, allowed: undefined }, 't'), /has no `allowed`/],
    [() => options.answer('10/minute', { ...decision, ruleIndex: 3 }, 't'), /`ruleIndex` 3 names none of the 1 rules/],
    [() => options.answer('10/minute', decision, 't', NaN), /`nowMs`/],
    [() => options.answer('10/minute', decision, 7), /`key`: expected a string/],
    [() => options.answer('10/minute', 'allowed', 't'), /`decision`/],
    [() => new ClientAddress({}).key(10), /`peer`: expected a string/],
    [() => scopedKey('api', 5), /`key`: expected a string/],
  ]) {
    assert.throws(call, (error) => {
      assert.equal(error.code, 'ERR_RATELOCK_INVALID_ARGUMENT', String(error))
      assert.match(error.message, message)
      return true
    })
  }
})

test('ClientAddress refuses options it would have coerced', () => {
  // Infinity trusted every hop (the client's own entry became the key), 1.5 one, -1 none; a network
  // that is not a string was dropped without a word; a bad subnet was read as 0.
  for (const [options, field] of [
    [{ trustedProxies: Infinity }, 'trustedProxies'],
    [{ trustedProxies: 1.5 }, 'trustedProxies'],
    [{ trustedProxies: -1 }, 'trustedProxies'],
    [{ trustedProxies: ['loopback', 10] }, 'trustedProxies'],
    [{ ipv6Subnet: 200 }, 'ipv6Subnet'],
  ]) {
    assert.throws(() => new ClientAddress(options), (error) => {
      assert.equal(error.code, 'ERR_RATELOCK_INVALID_ARGUMENT', String(error))
      assert.match(error.message, new RegExp(field))
      return true
    }, JSON.stringify(options))
  }
  assert.equal(new ClientAddress({ trustedProxies: 2 }).key('10.0.0.1', '203.0.113.5, 10.0.0.2'), '203.0.113.5')
  // A header that is not there, as Headers.get answers it.
  assert.equal(new ClientAddress({ trustedProxies: 1 }).key('10.0.0.1', null), '10.0.0.1')
  assert.equal(new ClientAddress({}).key('10.0.0.1'), '10.0.0.1')
})
