'use strict'
// The shared vectors (tests/vectors/*.json) through the Node API, on both stores, with explicit time:
// the same decisions as the Rust core and the Lua scripts (the runner is vector-runner.js).

const { after, before, describe, test } = require('node:test')

const { RedisServer } = require('./redis-server')
const { runScenario, vectorScenarios } = require('./vector-runner')

let redis
before(async () => {
  redis = await RedisServer.start()
})
after(() => redis.close())

for (const store of ['memory', 'redis']) {
  describe(`vectors on the ${store} store`, () => {
    for (const { name, scenario } of vectorScenarios()) {
      test(name, () => runScenario(store === 'redis' ? redis.url : undefined, scenario))
    }
  })
}
