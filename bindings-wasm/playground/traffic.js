// Traffic patterns for the playground: request times in milliseconds from the start of a run (which
// the page aligns to a period boundary), for a rule of `limit` per `periodMs`.

/** Twice the allowed rate, evenly spaced, for four periods. */
function steady(limit, periodMs) {
  const gap = periodMs / (2 * limit)
  return Array.from({ length: 8 * limit }, (_, i) => i * gap)
}

/** Bursts of 1.5× the limit at once, every 1.5 periods, four times. */
function bursty(limit, periodMs) {
  const size = Math.ceil(1.5 * limit)
  return Array.from({ length: 4 }, (_, burst) => Array.from({ length: size }, (_, i) => burst * 1.5 * periodMs + i)).flat()
}

/**
 * The fixed-window pitfall: `limit` requests just before a window boundary and `limit` just after,
 * all within a few milliseconds, then the same again a period later.
 */
function boundary(limit, periodMs) {
  const times = []
  for (const edge of [periodMs, 3 * periodMs]) {
    for (let i = limit; i >= 1; i--) times.push(edge - i)
    for (let i = 0; i < limit; i++) times.push(edge + i)
  }
  return times
}

/** Poisson arrivals at 1.5× the allowed rate over four periods (seeded, so runs repeat). */
function random(limit, periodMs) {
  let seed = 42
  const next = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648)
  const mean = periodMs / (1.5 * limit)
  const times = []
  for (let t = 0; t < 4 * periodMs; t += -Math.log(1 - next()) * mean) times.push(Math.floor(t))
  return times
}

export const patterns = { steady, bursty, boundary, random }

/** The most allowed requests within any span of `periodMs` (start inclusive, end exclusive). */
export function mostWithinOnePeriod(allowedTimes, periodMs) {
  let most = 0
  let start = 0
  for (let end = 0; end < allowedTimes.length; end++) {
    while (allowedTimes[end] - allowedTimes[start] >= periodMs) start++
    most = Math.max(most, end - start + 1)
  }
  return most
}
