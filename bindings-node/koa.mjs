// ESM entry point of ratelock/koa: the CommonJS exports of koa.js, and the whole object as the default
// export.
export * from './koa.js'
export { default } from './koa.js'
