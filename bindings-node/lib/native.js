'use strict'
// Loads the native addon (`ratelock.node`, built from source by `npm install`: scripts/build.js).

const path = require('node:path')

const addonPath = path.join(__dirname, '..', 'ratelock.node')

function load() {
  try {
    return require(addonPath)
  } catch (cause) {
    throw new Error(
      `ratelock: the native addon is missing or broken (${addonPath}); build it with \`npm run build\` ` +
        '(needs cargo)',
      { cause },
    )
  }
}

module.exports = load()
