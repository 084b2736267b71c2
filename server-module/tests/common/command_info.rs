//! `COMMAND INFO` and `COMMAND DOCS` replies read as plain text, so that a test states what the server
//! shows in one string.

use redis::{Connection, Value};

/// The key spec of a `numkeys key...` command that writes, as `COMMAND INFO` shows it.
pub const WRITE_KEY_SPEC: &str = "[[flags [RW access update] begin_search [type index spec [index 1]] \
     find_keys [type keynum spec [keynumidx 0 firstkey 1 keystep 1]]]]";

/// `value` as text: an array in brackets, its items space-separated; strings and integers bare.
pub fn plain(value: &Value) -> String {
    match value {
        Value::Array(items) | Value::Set(items) => {
            format!("[{}]", items.iter().map(plain).collect::<Vec<_>>().join(" "))
        }
        Value::Map(pairs) => {
            let items: Vec<String> = pairs.iter().flat_map(|(k, v)| [plain(k), plain(v)]).collect();
            format!("[{}]", items.join(" "))
        }
        Value::BulkString(bytes) => String::from_utf8_lossy(bytes).into_owned(),
        Value::SimpleString(text) => text.clone(),
        Value::Okay => "OK".into(),
        Value::Int(n) => n.to_string(),
        Value::Nil => "nil".into(),
        other => format!("{other:?}"),
    }
}

/// `COMMAND INFO command`'s entry (RESP2): name, arity, flags, first key, last key, step, ACL
/// categories, tips, key specs, subcommands.
pub fn command_info(con: &mut Connection, command: &str) -> Vec<Value> {
    let reply: Value = redis::cmd("COMMAND").arg("INFO").arg(command).query(con).unwrap();
    match reply {
        Value::Array(mut entries) if entries.len() == 1 => match entries.remove(0) {
            Value::Array(entry) => entry,
            other => panic!("{command} is not known to the server: {other:?}"),
        },
        other => panic!("unexpected COMMAND INFO reply {other:?}"),
    }
}

/// The arity `COMMAND INFO` shows for `command`.
pub fn arity(con: &mut Connection, command: &str) -> i64 {
    match command_info(con, command)[1] {
        Value::Int(n) => n,
        ref other => panic!("arity {other:?}"),
    }
}

/// The key specs `COMMAND INFO` shows for `command`, as [`plain`] text.
pub fn key_specs(con: &mut Connection, command: &str) -> String {
    plain(&command_info(con, command)[8])
}

/// What `COMMAND DOCS command` shows, as [`plain`] text.
pub fn docs(con: &mut Connection, command: &str) -> String {
    let reply: Value = redis::cmd("COMMAND").arg("DOCS").arg(command).query(con).unwrap();
    plain(&reply)
}

/// The keys `COMMAND GETKEYS` names for a two-rule RATELOCK.LIMIT call on `a` and `b` with the entry
/// key `a-standing`, as text: the rule keys, then the entry key (a ban or list entry), last.
pub fn limit_getkeys(con: &mut Connection) -> String {
    let mut getkeys = redis::cmd("COMMAND");
    getkeys
        .arg("GETKEYS")
        .arg("RATELOCK.LIMIT")
        .arg(3)
        .arg(&["a", "b", "a-standing", "hit", "", "1"])
        .arg(&["g", "1", "1000", "1", "0", "g", "1", "1000", "1", "0"]);
    plain(&super::run(con, &getkeys).expect("COMMAND GETKEYS"))
}
