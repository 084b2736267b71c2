// ESM entry point of ratelock/express: the CommonJS exports of express.js, and the whole object as the
// default export.
export * from './express.js'
export { default } from './express.js'
