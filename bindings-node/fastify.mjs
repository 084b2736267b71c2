// ESM entry point of ratelock/fastify: the CommonJS exports of fastify.js, and the whole object as the default
// export.
export * from './fastify.js'
export { default } from './fastify.js'
