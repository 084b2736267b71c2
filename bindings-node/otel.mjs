// ESM entry point of ratelock/otel: the CommonJS exports of otel.js, and the whole object as the
// default export.
export * from './otel.js'
export { default } from './otel.js'
