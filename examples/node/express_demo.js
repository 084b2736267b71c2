'use strict'
// The Express example against itself: serves express_app.js on a free loopback port and sends
// requests to /search until one is limited, showing the headers each answer carries.

const { createApp } = require('./express_app')

async function main() {
  const server = createApp().listen(0, '127.0.0.1')
  await new Promise((resolve) => server.once('listening', resolve))
  const base = `http://127.0.0.1:${server.address().port}`
  console.log(`Express example on ${base} (${process.env.REDIS_URL ?? 'memory store'}), GET /search:`)
  for (let attempt = 1; attempt <= 10; attempt++) {
    const response = await fetch(`${base}/search`)
    const shown = ['ratelimit', 'ratelimit-policy', 'retry-after']
      .map((name) => response.headers.get(name) && `${name}: ${response.headers.get(name)}`)
      .filter(Boolean)
      .join(' | ')
    console.log(`  #${attempt} ${response.status} ${(await response.text()).trim()}  [${shown}]`)
    if (response.status === 429) break
  }
  server.close()
}

main().catch((error) => {
  console.error(error)
  process.exit(1)
})
