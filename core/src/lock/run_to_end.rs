//! A try for a hold runs to its end even when its caller stops waiting for it. A caller stops by
//! dropping the future: a `tokio::time::timeout` around `acquire`, a cancelled asyncio task, a
//! `select!` that took another branch. Dropped mid-call, the try's script may already have granted the
//! hold on the server, and with no guard to give it back the lock stayed taken until its lease ran
//! out, the caller's own next try included. Run to its end, the try makes its guard, and a guard whose
//! caller has gone is dropped, which gives the hold back (`Guard`'s `Drop`).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::error::Result;

/// Runs `call` (a try that makes a guard when it is granted) to its end. It is awaited in place, with
/// nothing spawned while its caller waits (a task per try cost the 64-task lock bench a fifth of its
/// pairs); only if this future is dropped with the call still pending does the call move to a task of
/// the runtime it ran on, where it ends and its answer, its guard with it, is dropped. Outside any
/// runtime a dropped call is dropped.
pub(crate) async fn run_to_end<T, F>(call: F) -> Result<T>
where
    T: Send + 'static,
    F: Future<Output = Result<T>> + Send + 'static,
{
    ToTheEnd {
        call: Some(Box::pin(call)),
        runtime: None,
    }
    .await
}

/// A call awaited in place that, dropped while pending, goes on as a task (see [`run_to_end`]).
struct ToTheEnd<T: Send + 'static> {
    call: Option<Pin<Box<dyn Future<Output = Result<T>> + Send>>>,
    /// The runtime current when the call was first polled: a call dropped where none is current
    /// (Python's blocking API, interrupted by a signal handler) goes on there.
    runtime: Option<tokio::runtime::Handle>,
}

impl<T: Send + 'static> Future for ToTheEnd<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        if self.runtime.is_none() {
            self.runtime = tokio::runtime::Handle::try_current().ok();
        }
        let call = self
            .call
            .as_mut()
            .expect("a run_to_end future polled after it ended");
        let answer = std::task::ready!(call.as_mut().poll(cx));
        self.call = None;
        Poll::Ready(answer)
    }
}

impl<T: Send + 'static> Drop for ToTheEnd<T> {
    fn drop(&mut self) {
        let Some(call) = self.call.take() else {
            return;
        };
        // Nobody waits for the answer: dropped when it comes, a grant's guard gives it back.
        in_background(self.runtime.take(), async move {
            drop(call.await);
        });
    }
}

/// The runtime current here, else `began_on` (the one a hold or a wait began on: a guard or a wait
/// dropped where none is current, as Python's blocking API drops them, finishes there).
pub(crate) fn current_or(began_on: Option<tokio::runtime::Handle>) -> Option<tokio::runtime::Handle> {
    tokio::runtime::Handle::try_current().ok().or(began_on)
}

/// Runs `work` as a task of [`current_or`]`(began_on)`; with no runtime at all, nothing can run it.
pub(crate) fn in_background(
    began_on: Option<tokio::runtime::Handle>,
    work: impl Future<Output = ()> + Send + 'static,
) {
    if let Some(runtime) = current_or(began_on) {
        runtime.spawn(work);
    }
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
