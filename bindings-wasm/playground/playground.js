// The playground page: runs a traffic pattern through the WebAssembly limiter at virtual times and
// draws the decisions and the remaining units over time.
import init, { Limiter } from '../pkg/ratelock_wasm.js'
import { patterns, mostWithinOnePeriod } from './traffic.js'

const PERIODS_MS = { '1 second': 1_000, '10 seconds': 10_000, '1 minute': 60_000 }
const START_MS = 1_800_000_000_000 // a whole number of minutes: every window boundary falls on it

const $ = (id) => document.getElementById(id)

function run() {
  const algorithm = $('algorithm').value
  const limit = Math.max(1, Math.min(1000, Number($('limit').value) || 1))
  const periodText = $('period').value
  const periodMs = PERIODS_MS[periodText]
  const rule = `${limit} per ${periodText} using ${algorithm}`
  $('rule').textContent = `rule: "${rule}"`
  const limiter = new Limiter()
  const times = patterns[$('pattern').value](limit, periodMs)
  const decisions = times.map((t) => {
    const decision = limiter.hit('playground', rule, 1, START_MS + t)
    return { t, allowed: decision.allowed, remaining: decision.remaining }
  })
  limiter.free()
  const allowedTimes = decisions.filter((d) => d.allowed).map((d) => d.t)
  $('requests').textContent = String(decisions.length)
  $('allowed').textContent = String(allowedTimes.length)
  $('denied').textContent = String(decisions.length - allowedTimes.length)
  $('limit-shown').textContent = String(limit)
  $('max-in-period').textContent = String(mostWithinOnePeriod(allowedTimes, periodMs))
  draw(decisions, limit, periodMs)
  document.body.dataset.ran = String(Number(document.body.dataset.ran ?? 0) + 1)
}

function draw(decisions, limit, periodMs) {
  const canvas = $('timeline')
  const context = canvas.getContext('2d')
  const { width, height } = canvas
  const pad = 30
  const end = Math.max(...decisions.map((d) => d.t), 4 * periodMs)
  const x = (t) => pad + ((width - 2 * pad) * t) / end
  const y = (remaining) => height - pad - ((height - 2 * pad - 40) * remaining) / limit
  context.clearRect(0, 0, width, height)
  context.strokeStyle = '#dde'
  context.fillStyle = '#889'
  context.font = '11px system-ui'
  for (let t = 0; t <= end; t += periodMs) {
    context.beginPath()
    context.moveTo(x(t), pad)
    context.lineTo(x(t), height - pad)
    context.stroke()
    context.fillText(`${t / 1000}s`, x(t) + 2, height - 10)
  }
  for (const d of decisions) {
    context.fillStyle = d.allowed ? '#1f9d55' : '#d64545'
    context.fillRect(x(d.t), d.allowed ? pad : pad + 18, 2, 14)
  }
  // The state holds between requests: a step line.
  context.strokeStyle = '#2454d6'
  context.beginPath()
  decisions.forEach((d, i) => {
    if (i === 0) context.moveTo(x(d.t), y(d.remaining))
    else {
      context.lineTo(x(d.t), y(decisions[i - 1].remaining))
      context.lineTo(x(d.t), y(d.remaining))
    }
  })
  context.stroke()
}

init()
  .then(() => {
    $('controls').addEventListener('submit', (event) => {
      event.preventDefault()
      try {
        $('error').hidden = true
        run()
      } catch (error) {
        $('error').hidden = false
        $('error').textContent = `${error.name}: ${error.message}`
      }
    })
    run()
  })
  .catch((error) => {
    $('error').hidden = false
    $('error').textContent = `could not load the WebAssembly core: ${error}`
  })
