// The built documentation site (target/docs-site, `make docs`): every local link and anchor of every
// page resolves, and headless Chromium renders the front page and a reference page with no script
// error (screenshots in target/docs-screenshots/ for humans to look at).
import assert from 'node:assert/strict'
import { createReadStream, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { createServer } from 'node:http'
import { dirname, extname, join, normalize, relative, sep } from 'node:path'
import { after, before, test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'

const SITE = fileURLToPath(new URL('../../target/docs-site/', import.meta.url))
const SCREENSHOTS = fileURLToPath(new URL('../../target/docs-screenshots/', import.meta.url))
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium'
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.mjs': 'text/javascript',
  '.css': 'text/css', '.wasm': 'application/wasm', '.json': 'application/json', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.woff2': 'font/woff2', '.woff': 'font/woff', '.ttf': 'font/ttf' }

/** Every file under `dir`. */
function files(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : [join(dir, entry.name)])
}

/** The ids a page defines (anchors a link may name), by a light reading of its HTML. */
const idsOf = (() => {
  const cache = new Map()
  return (file) => {
    if (!cache.has(file)) {
      const html = readFileSync(file, 'utf8')
      cache.set(file, new Set([...html.matchAll(/\s(?:id|name)=["']([^"']+)["']/g)].map((m) => m[1])))
    }
    return cache.get(file)
  }
})()

/** Whether `file` defines `anchor` (as written, or percent-decoded); rustdoc's source pages number
 * their lines (`#46`, `#47-88`) in script, which counts as defined. */
function hasAnchor(file, anchor) {
  const ids = idsOf(file)
  if (ids.has(anchor) || ids.has(decodeURIComponent(anchor))) return true
  return /\/src\//.test(file) && /^\d+(-\d+)?$/.test(anchor)
}

test('every local link and anchor of every page resolves', () => {
  assert.ok(existsSync(join(SITE, 'index.html')), 'build the site first: make docs')
  const pages = files(SITE).filter((file) => file.endsWith('.html'))
  assert.ok(pages.length > 40, `only ${pages.length} pages`)
  const broken = []
  for (const page of pages) {
    const html = readFileSync(page, 'utf8')
    for (const [, attribute, raw] of html.matchAll(/\s(href|src)=["']([^"']*)["']/g)) {
      const link = raw.replaceAll('&amp;', '&')
      if (link === '' || /^(https?:|mailto:|data:|javascript:|#$)/.test(link)) continue
      const [path, anchor] = link.split('#')
      const target = path === '' ? page : normalize(join(dirname(page), decodeURIComponent(path.split('?')[0])))
      const file = existsSync(target) && statSync(target).isDirectory() ? join(target, 'index.html') : target
      if (!existsSync(file)) {
        broken.push(`${relative(SITE, page)}: ${attribute}=${raw}`)
      } else if (anchor && file.endsWith('.html') && !hasAnchor(file, anchor)) {
        broken.push(`${relative(SITE, page)}: ${attribute}=${raw} (no such anchor)`)
      }
    }
  }
  assert.deepEqual(broken, [])
})

let server
let browser
before(async () => {
  server = createServer((req, res) => {
    const path = decodeURIComponent(new URL(req.url, 'http://localhost').pathname)
    let file = normalize(join(SITE, path))
    if (!file.startsWith(SITE.endsWith(sep) ? SITE : SITE + sep) && file !== SITE.slice(0, -1)) return res.writeHead(403).end()
    if (existsSync(file) && statSync(file).isDirectory()) file = join(file, 'index.html')
    if (!existsSync(file)) return res.writeHead(404).end('not found')
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream' })
    createReadStream(file).pipe(res)
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
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

async function screenshot(path, name, expectText) {
  const page = await browser.newPage({ viewport: { width: 1440, height: 900 } })
  const failures = []
  page.on('pageerror', (error) => failures.push(error.message))
  const response = await page.goto(`http://127.0.0.1:${server.address().port}/${path}`)
  assert.equal(response.status(), 200)
  await page.waitForLoadState('load')
  assert.ok((await page.textContent('body')).includes(expectText), `${path} shows "${expectText}"`)
  mkdirSync(SCREENSHOTS, { recursive: true })
  const png = await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: false })
  assert.ok(png.length > 20_000, `${name}.png is ${png.length} bytes: the page rendered nothing much`)
  assert.deepEqual(failures, [])
  await page.close()
}

test('the front page renders in headless Chromium', () => screenshot('index.html', 'front-page', 'Rate limiting and distributed locks'))
test('the Python API reference renders in headless Chromium', () => screenshot('reference/python.html', 'python-reference', 'hit'))
test('the Rust API reference renders in headless Chromium', () => screenshot('reference/rust/ratelock/index.html', 'rust-reference', 'Limiter'))
test('the Node API reference renders in headless Chromium', () => screenshot('reference/node/index.html', 'node-reference', 'Limiter'))
