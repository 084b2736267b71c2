// The playground in headless Chromium (Debian's chromium, driven by playwright-core): the boundary
// double burst admits up to twice the limit within one period under fixed_window, and never more than
// the limit under sliding_log. Screenshots go to target/ for humans to look at.
import assert from 'node:assert/strict'
import { mkdirSync } from 'node:fs'
import { after, before, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'

import { serve } from '../../bindings-wasm/playground/serve.mjs'

const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'
const SCREENSHOTS = fileURLToPath(new URL('../../target/', import.meta.url))

let server
let browser
before(async () => {
  server = await serve(0)
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  })
})
after(async () => {
  await browser?.close()
  server?.close()
})

async function boundaryBurst(algorithm) {
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } })
  const failures = []
  page.on('pageerror', (error) => failures.push(error.message))
  await page.goto(`http://127.0.0.1:${server.address().port}/playground/`)
  await page.waitForSelector('body[data-ran]')
  await page.selectOption('#algorithm', algorithm)
  await page.selectOption('#pattern', 'boundary')
  await page.fill('#limit', '10')
  const before = await page.getAttribute('body', 'data-ran')
  await page.click('#run')
  await page.waitForFunction((count) => document.body.dataset.ran !== count, before)
  const read = async (id) => Number(await page.textContent(id))
  const figures = { limit: await read('#limit-shown'), most: await read('#max-in-period'), allowed: await read('#allowed') }
  mkdirSync(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: `${SCREENSHOTS}playground-${algorithm}.png`, fullPage: true })
  assert.deepEqual(failures, [])
  assert.equal(await page.isHidden('#error'), true, await page.textContent('#error'))
  await page.close()
  return figures
}

test('fixed_window admits up to twice the limit across a window boundary', async () => {
  const { limit, most } = await boundaryBurst('fixed_window')
  assert.equal(limit, 10)
  assert.equal(most, 2 * limit, 'the boundary double burst gets through whole')
})

test('sliding_log never admits more than the limit within one period', async () => {
  const { limit, most, allowed } = await boundaryBurst('sliding_log')
  assert.ok(most <= limit, `${most} allowed within one period`)
  assert.equal(most, limit, 'and it does admit the limit')
  assert.ok(allowed > 0)
})
