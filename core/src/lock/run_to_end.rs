//! A try for a hold runs to its end even when its caller stops waiting for it. A caller stops by
//! dropping the future: a `tokio::time::timeout` around `acquire`, a cancelled asyncio task, a
//! `select!` that took another branch. Dropped mid-call, the try's script may already have granted the
//! hold on the server, and with no guard to give it back the lock stayed taken until its lease ran
//! out, the caller's own next try included. Run to its end, the try makes its guard, and a guard whose
//! caller has gone is dropped, which gives the hold back (`Guard`'s `Drop`).

use std::future::{poll_fn, Future};
use std::task::Poll;

use crate::error::{Error, Result};

/// Runs `call` (a try that makes a guard when it is granted) to its end. It is polled here first: a
/// call that needs no I/O (the memory store) ends there, costing nothing more. One that must wait goes
/// on as a task of the current tokio runtime while this future waits for its answer; should this
/// future be dropped, the answer, and so its guard, is dropped when it comes. Outside a runtime the
/// call is simply awaited here.
pub(crate) async fn run_to_end<T, F>(call: F) -> Result<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    let mut call = Box::pin(call);
    if let Poll::Ready(answer) = poll_fn(|cx| Poll::Ready(call.as_mut().poll(cx))).await {
        return answer;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return call.await;
    };
    let (answer_to, answer) = tokio::sync::oneshot::channel();
    runtime.spawn(async move {
        // Refused when the caller has gone: the answer, its guard with it, is dropped here.
        let _ = answer_to.send(call.await);
    });
    answer.await.unwrap_or_else(|_| {
        Err(Error::StoreUnavailable(
            "the runtime stopped before the lock call ended".into(),
        ))
    })
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;

    /// Sets its flag when dropped: a guard's stand-in.
    struct Held(Arc<AtomicBool>);

    impl Drop for Held {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn an_answer_ready_at_once_needs_no_task() {
        assert_eq!(run_to_end(async { Ok(7) }).await.unwrap(), 7);
    }

    #[tokio::test]
    async fn a_call_whose_caller_stopped_waiting_ends_and_its_answer_is_dropped() {
        let given_back = Arc::new(AtomicBool::new(false));
        let flag = given_back.clone();
        let call = run_to_end(async move {
            tokio::time::sleep(Duration::from_millis(50)).await;
            Ok(Held(flag))
        });
        assert!(tokio::time::timeout(Duration::from_millis(5), call)
            .await
            .is_err());
        assert!(!given_back.load(Ordering::SeqCst), "ended early");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(given_back.load(Ordering::SeqCst), "the answer was never dropped");
    }
}
