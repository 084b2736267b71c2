'use strict'
// Loads the native addon: `ratelock.node` when it was built from source here (a clone, or the install
// script's fallback), else the prebuilt package of this platform (`ratelock-linux-x64-gnu`, ...).

const fs = require('node:fs')
const path = require('node:path')
const { platformName, prebuiltPackage } = require('./platform')

const builtHere = path.join(__dirname, '..', 'ratelock.node')

function load() {
  if (fs.existsSync(builtHere)) return loadFrom(builtHere)
  const prebuilt = prebuiltPackage()
  if (prebuilt !== null) {
    let resolved = null
    try {
      resolved = require.resolve(prebuilt)
    } catch {
      // not installed: npm skipped it, or optional dependencies were turned off
    }
    if (resolved !== null) return loadFrom(resolved)
  }
  throw new Error(
    `ratelock: no native addon for ${platformName()}: the prebuilt package ` +
      `${prebuilt ?? '(none for this platform)'} is not installed and none was built from source; ` +
      'reinstall with optional dependencies, or build from source with `npm rebuild ratelock` (needs cargo)',
  )
}

function loadFrom(file) {
  try {
    return require(file)
  } catch (cause) {
    throw new Error(`ratelock: the native addon at ${file} could not be loaded`, { cause })
  }
}

module.exports = load()
