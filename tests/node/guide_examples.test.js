'use strict'
// Every JavaScript example of the documentation guide (docs/guide) runs as an ES module, against a real
// redis-server (its URL in REDIS_URL), with the packages examples/node installs. A block that only
// includes an example file (`--8<-- "examples/..."`) is covered by examples.test.js, which runs that file.

const assert = require('node:assert/strict')
const { spawnSync } = require('node:child_process')
const fs = require('node:fs')
const path = require('node:path')
const { after, before, test } = require('node:test')

const { RedisServer } = require('./redis-server')

const ROOT = path.join(__dirname, '..', '..')
const GUIDE = path.join(ROOT, 'docs', 'guide')
const WORK = path.join(ROOT, 'target', 'guide-examples')
const INCLUDE = /^--8<-- "examples\/node\/([^"]+)"$/

function pages(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? pages(path.join(dir, entry.name)) : entry.name.endsWith('.md') ? [path.join(dir, entry.name)] : [])
}

const BLOCKS = pages(GUIDE).sort().flatMap((page) => {
  const text = fs.readFileSync(page, 'utf8')
  return [...text.matchAll(/^```js\n([\s\S]*?)^```/gm)].map((match) => ({
    where: `${path.relative(GUIDE, page)}:${text.slice(0, match.index).split('\n').length}`,
    code: match[1],
  }))
})

let redis
before(async () => {
  redis = await RedisServer.start()
  fs.mkdirSync(WORK, { recursive: true })
  const modules = path.join(WORK, 'node_modules')
  if (!fs.existsSync(modules)) fs.symlinkSync(path.join(ROOT, 'examples', 'node', 'node_modules'), modules, 'dir')
})
after(() => redis.close())

test('the guide has JavaScript examples', () => assert.ok(BLOCKS.length >= 8, `${BLOCKS.length} blocks`))

for (const [index, { where, code }] of BLOCKS.entries()) {
  test(`docs/guide/${where} runs`, () => {
    const included = INCLUDE.exec(code.trim())
    if (included) {
      assert.ok(fs.existsSync(path.join(ROOT, 'examples', 'node', included[1])), `${where} includes a missing file`)
      assert.match(fs.readFileSync(path.join(__dirname, 'examples.test.js'), 'utf8'), new RegExp(`'${included[1]}'`),
        `${where} includes an example no test runs`)
      return
    }
    const file = path.join(WORK, `example-${index}.mjs`)
    fs.writeFileSync(file, code)
    const done = spawnSync(process.execPath, [file], { env: { ...process.env, REDIS_URL: redis.url }, encoding: 'utf8', timeout: 60_000 })
    assert.equal(done.status, 0, `${where} failed:\n${done.stderr}`)
  })
}
