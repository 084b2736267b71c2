// ESM entry point of ratelock/hono: the CommonJS exports of hono.js, and the whole object as the default
// export.
export * from './hono.js'
export { default } from './hono.js'
