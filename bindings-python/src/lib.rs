//! The native module `ratelock._native`: thin wrappers over the Rust core (one file per core type),
//! re-exported by the pure-Python package `ratelock`. No algorithm, key format or Lua lives here.

mod async_twins;
mod completions;
mod convert;
mod decision;
mod errors;
mod exit;
mod fair_lock;
mod guards;
mod http;
mod limiter;
mod lock;
mod lock_handle;
mod lock_options;
mod lock_states;
mod metrics;
mod metrics_queue;
mod process_runtime;
mod recorder_call;
mod runtime;
mod rwlock;
mod semaphore;
mod stale_answers;
mod stores;

use pyo3::prelude::*;

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<completions::Completions>()?;
    module.add_class::<stores::PyClient>()?;
    module.add_class::<limiter::PyLimiter>()?;
    module.add_class::<decision::PyDecision>()?;
    module.add_class::<lock_options::PyLockOptions>()?;
    module.add_class::<lock::PyLockHandle>()?;
    module.add_class::<semaphore::PySemaphoreHandle>()?;
    module.add_class::<fair_lock::PyFairLockHandle>()?;
    module.add_class::<rwlock::PyReadWriteLockHandle>()?;
    module.add_class::<rwlock::PyReadWriteLockSide>()?;
    module.add_class::<guards::PyGuard>()?;
    module.add_class::<guards::PyLockGuard>()?;
    module.add_class::<guards::PyPermitGuard>()?;
    module.add_class::<guards::PyLeaseGuard>()?;
    module.add_class::<lock_states::PyFairLockState>()?;
    module.add_class::<lock_states::PyRwLockState>()?;
    module.add_class::<http::PyHttpOptions>()?;
    module.add_class::<http::PyHttpAnswer>()?;
    module.add_class::<http::PyClientAddress>()?;
    module.add_function(wrap_pyfunction!(http::scoped_key, module)?)?;
    module.add_function(wrap_pyfunction!(metrics::instruments, module)?)?;
    module.add_function(wrap_pyfunction!(http::parse_rules, module)?)?;
    errors::register(module)?;
    module.add("__version__", env!("CARGO_PKG_VERSION"))?;
    module.add("MAX_KEY_BYTES", ratelock::MAX_KEY_BYTES)?;
    module.add("MAX_RULES", ratelock::MAX_RULES)?;
    // Not an attribute of the module: the runtime stops once, at exit, and nothing else may call it.
    let stop = wrap_pyfunction!(exit::stop_at_exit, module)?;
    module.py().import("atexit")?.call_method1("register", (stop,))?;
    // And before every `atexit` handler, the measurements queued by then (see `exit.rs`).
    let threading = module.py().import("threading")?;
    if let Ok(register) = threading.getattr("_register_atexit") {
        // Refused (RuntimeError) once the interpreter is shutting down, ratelock imported by an exit
        // handler: there is nothing left to record before the handlers then. Any other error is raised.
        let registered = register.call1((wrap_pyfunction!(exit::record_before_exit, module)?,));
        if let Err(error) = registered {
            if !error.is_instance_of::<pyo3::exceptions::PyRuntimeError>(module.py()) {
                return Err(error);
            }
        }
    }
    Ok(())
}
