//! `cargo run -p ratelock-testkit --bin vectors -- fill`: computes the `expect` of every step of the
//! shared vectors with the Rust core (memory store) and rewrites the files. Run it only for new
//! scenarios, review the diff by hand, and never to make a failing implementation pass.
//! `-- fill-http` does the same for the adapter core's answers (`tests/vectors/http/answers.json`).

use ratelock::store::MemoryStore;
use ratelock::Store;
use ratelock_testkit::vectors::{load_all, run_step, vectors_dir, Answer, VectorFile, Via};

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let command = std::env::args().nth(1).unwrap_or_default();
    if command == "fill-http" {
        fill_http();
        return;
    }
    if command != "fill" {
        eprintln!("usage: vectors fill   (rewrites tests/vectors/*.json expectations from the Rust core)");
        std::process::exit(2);
    }
    for (name, mut file) in load_all() {
        let store = Store::Memory(MemoryStore::unbounded());
        for (index, scenario) in file.scenarios.clone().iter().enumerate() {
            let prefix = format!("fill{index}");
            for (step_index, step) in scenario.steps.iter().enumerate() {
                let answer = run_step(&store, &prefix, scenario, step, Via::Async).await;
                let target = &mut file.scenarios[index].steps[step_index];
                target.expect = None;
                target.expect_error = None;
                target.expect_changed = None;
                match answer {
                    Answer::Decision(expect) => target.expect = Some(expect),
                    Answer::Error(code) => target.expect_error = Some(code),
                    Answer::Changed(changed) => target.expect_changed = Some(changed),
                    Answer::Done => {}
                }
            }
        }
        std::fs::write(vectors_dir().join(&name), render(&file)).expect("write vector file");
        println!("filled {name}");
    }
}

/// Fills every `expect` of the adapter core's answers from the Rust core.
fn fill_http() {
    use ratelock_testkit::http_vectors::{answer, http_vectors_dir, load, AnswerFile};
    let mut file: AnswerFile = load("answers.json");
    for case in &mut file.cases {
        case.expect = answer(case);
    }
    let mut out = serde_json::to_string_pretty(&file).expect("serialize");
    out.push('\n');
    std::fs::write(http_vectors_dir().join("answers.json"), out).expect("write answers.json");
    println!("filled http/answers.json");
}

/// Pretty JSON with one step per line, so diffs of vector files stay readable.
fn render(file: &VectorFile) -> String {
    let mut out = String::from("{\n");
    out += &format!(
        "  \"description\": {},\n  \"scenarios\": [\n",
        json(&file.description)
    );
    for (i, scenario) in file.scenarios.iter().enumerate() {
        out += "    {\n";
        out += &format!("      \"name\": {},\n", json(&scenario.name));
        out += &format!("      \"description\": {},\n", json(&scenario.description));
        if let Some(rules) = &scenario.rules {
            out += &format!("      \"rules\": {},\n", json(rules));
        }
        if let Some(key) = &scenario.key {
            out += &format!("      \"key\": {},\n", json(key));
        }
        out += "      \"steps\": [\n";
        for (j, step) in scenario.steps.iter().enumerate() {
            let comma = if j + 1 < scenario.steps.len() { "," } else { "" };
            out += &format!("        {}{comma}\n", json(step));
        }
        out += "      ]\n";
        out += if i + 1 < file.scenarios.len() {
            "    },\n"
        } else {
            "    }\n"
        };
    }
    out += "  ]\n}\n";
    out
}

/// One value as compact JSON.
fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("serialize")
}
