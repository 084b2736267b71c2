// ESM entry point: the CommonJS exports of index.js under their names (Node reads them from its
// object literal), and the whole object as the default export.
export * from './index.js'
export { default } from './index.js'
