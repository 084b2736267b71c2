//! Finished limiter calls, handed to JavaScript in batches: a call's task on the runtime queues its
//! numbers here, and one pending `nextBatch()` promise takes everything queued when it resolves. Under
//! load one hop back to the JavaScript thread carries many answers, and no JS object is built in Rust.

use std::sync::Mutex;

use napi::bindgen_prelude::Float64Array;
use napi_derive::napi;
use tokio::sync::Notify;

use crate::decision_numbers::DECISION_FIELDS;
use crate::errors::{Error, Failure};

/// What one `nextBatch()` hands over.
#[napi(object)]
pub struct Batch {
    /// Per answered call: its id, then the `DECISION_FIELDS` numbers of its decision.
    pub answers: Float64Array,
    /// Ids of the calls that failed, with their errors in `failures`.
    pub failed: Vec<u32>,
    pub failures: Vec<Failure>,
}

#[derive(Default)]
pub(crate) struct Completions {
    queued: Mutex<Queued>,
    ready: Notify,
}

#[derive(Default)]
struct Queued {
    answers: Vec<f64>,
    failed: Vec<u32>,
    failures: Vec<Failure>,
}

impl Completions {
    /// Queues the answer of call `id`.
    pub(crate) fn answer(&self, id: u32, decision: [f64; DECISION_FIELDS]) {
        let mut queued = self.lock();
        queued.answers.push(f64::from(id));
        queued.answers.extend_from_slice(&decision);
        drop(queued);
        self.ready.notify_one();
    }

    /// Queues the failure of call `id`.
    pub(crate) fn fail(&self, id: u32, error: Error) {
        let mut queued = self.lock();
        queued.failed.push(id);
        queued.failures.push(error.into());
        drop(queued);
        self.ready.notify_one();
    }

    /// Everything queued, waiting until there is something.
    pub(crate) async fn next_batch(&self) -> Batch {
        loop {
            {
                let mut queued = self.lock();
                if !queued.answers.is_empty() || !queued.failed.is_empty() {
                    let taken = std::mem::take(&mut *queued);
                    return Batch {
                        answers: Float64Array::new(taken.answers),
                        failed: taken.failed,
                        failures: taken.failures,
                    };
                }
            }
            self.ready.notified().await;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queued> {
        self.queued
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
