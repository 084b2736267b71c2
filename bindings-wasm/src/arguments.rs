//! String arguments read from what JavaScript passed, checked first: wasm-bindgen's own glue for a
//! `&str` parameter copies a number or an object as if it were text, which read past the module's
//! memory (a trap, after which the module is unusable) or failed with a message naming no argument.

use wasm_bindgen::JsValue;

use crate::{invalid_argument, to_js};

/// Argument `name` as text, or an invalid argument naming it and what was given instead.
pub(crate) fn text(name: &str, value: &JsValue) -> Result<String, JsValue> {
    value
        .as_string()
        .ok_or_else(|| invalid_argument(name, format!("expected a string, got {}", type_of(value))))
}

/// Optional argument `name` as text: left out, `undefined` and `null` (what `Headers.get` answers for a
/// header that is not there) are none.
pub(crate) fn optional_text(name: &str, value: Option<JsValue>) -> Result<Option<String>, JsValue> {
    match value {
        Some(value) if !value.is_null() && !value.is_undefined() => text(name, &value).map(Some),
        _ => Ok(None),
    }
}

/// A key: text of at most the core's `MAX_KEY_BYTES`, as every other package checks it.
pub(crate) fn key(value: &JsValue) -> Result<String, JsValue> {
    let key = text("key", value)?;
    ratelock::key::check_key("key", key.as_bytes()).map_err(to_js)?;
    Ok(key)
}

/// How a value that is not a string reads in an error message: its JavaScript type.
fn type_of(value: &JsValue) -> String {
    value
        .js_typeof()
        .as_string()
        .unwrap_or_else(|| "a value".to_owned())
}
