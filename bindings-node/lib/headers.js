'use strict'
// Rate-limit response headers from one decision: the IETF drafts' `RateLimit-*` fields (draft 6, 7
// or 8 of draft-ietf-httpapi-ratelimit-headers) and the legacy `X-RateLimit-*` trio.

/** Whole seconds, rounded up, of a span in milliseconds. */
const seconds = (ms) => Math.max(0, Math.ceil(ms / 1000))

/** Sets the standard fields of `draft` ('draft-6' | 'draft-7' | 'draft-8'). */
function setStandard(res, draft, decision) {
  const window = seconds(decision.periodMs)
  const reset = seconds(decision.resetAfterMs)
  switch (draft) {
    case 'draft-6':
      res.setHeader('RateLimit-Policy', `${decision.limit};w=${window}`)
      res.setHeader('RateLimit-Limit', String(decision.limit))
      res.setHeader('RateLimit-Remaining', String(decision.remaining))
      res.setHeader('RateLimit-Reset', String(reset))
      break
    case 'draft-7':
      res.setHeader('RateLimit-Policy', `${decision.limit};w=${window}`)
      res.setHeader('RateLimit', `limit=${decision.limit}, remaining=${decision.remaining}, reset=${reset}`)
      break
    case 'draft-8': {
      const name = `"${decision.limit}-in-${window}s"`
      res.setHeader('RateLimit-Policy', `${name};q=${decision.limit};w=${window}`)
      res.setHeader('RateLimit', `${name};r=${decision.remaining};t=${reset}`)
      break
    }
    default:
      throw new TypeError(`unknown standardHeaders ${JSON.stringify(draft)}`)
  }
}

/** Sets `X-RateLimit-Limit`, `-Remaining` and `-Reset` (Unix time in seconds, when fully reset). */
function setLegacy(res, decision, nowMs = Date.now()) {
  res.setHeader('X-RateLimit-Limit', String(decision.limit))
  res.setHeader('X-RateLimit-Remaining', String(decision.remaining))
  res.setHeader('X-RateLimit-Reset', String(Math.ceil((nowMs + decision.resetAfterMs) / 1000)))
}

/** `Retry-After` in whole seconds (at least 1 on a rejection). */
function setRetryAfter(res, decision) {
  res.setHeader('Retry-After', String(Math.max(1, seconds(decision.retryAfterMs))))
}

module.exports = { setStandard, setLegacy, setRetryAfter }
