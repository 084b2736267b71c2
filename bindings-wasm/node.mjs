// Node entry point of the WebAssembly package: loads the module from disk (browsers use
// pkg/ratelock_wasm.js, whose default export fetches it) and re-exports the API.
import { readFileSync } from 'node:fs'
import { initSync } from './pkg/ratelock_wasm.js'

initSync({ module: readFileSync(new URL('./pkg/ratelock_wasm_bg.wasm', import.meta.url)) })

export { ClientAddress, HttpOptions, Limiter, scopedKey } from './pkg/ratelock_wasm.js'
