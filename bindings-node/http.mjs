// ESM entry point of ratelock/http: the CommonJS exports of http.js, and the whole object as the
// default export.
export * from './http.js'
export { default } from './http.js'
