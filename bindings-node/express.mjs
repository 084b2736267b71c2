// ESM entry point of ratelock/express.
import express from './express.js'

export const { rateLimit } = express
export default express
