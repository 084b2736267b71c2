//! `lock_handle_pymethods!`: what every native lock handle's `#[pymethods]` has, written once: the
//! constructor (the lock's name and the kind's own arguments, then `url` and a `LockOptions`) and, for a
//! handle that takes holds, `try_acquire` and `acquire` over its core lock `self.inner`, each with its
//! asyncio twin. The kind gives how its core lock is built, which guard class its holds come as, and its
//! own methods.

/// Writes `#[pymethods] impl $class` (through `pymethods_with_async_twins!`) from:
/// - `new(name, ...) = |store, options| build;`: a constructor taking those arguments (any Python
///   objects), then `url=None, options=None`; `build` makes the core lock from them, the store and the
///   core options, answering `ratelock::Result`. Optional (a handle Python does not construct has none).
/// - `acquires Guard;`: `try_acquire` and `acquire` (and their `_async` twins) on `self.inner`, whose
///   holds come as `Guard` objects. Optional.
/// - `twins { ... }` and `plain { ... }`: the handle's own methods, as for `pymethods_with_async_twins!`.
macro_rules! lock_handle_pymethods {
    (
        impl $class:ident {
            $(new($($argument:ident),*) = |$store:ident, $options:ident| $build:expr;)?
            $(acquires $guard:ty;)?
            $(twins { $($twins:tt)* })?
        }
        $(plain { $($plain:tt)* })?
    ) => {
        $crate::async_twins::pymethods_with_async_twins! {
            impl $class {
                $(
                    /// Takes a hold if one can be had now; `None` otherwise (never waits).
                    fn try_acquire / try_acquire_async(&self) -> Option<$crate::guards::NewGuard<$guard>> {
                        let lock = self.inner.clone();
                        async move { Ok(lock.try_acquire().await?.map($crate::guards::NewGuard::of)) }
                    }

                    /// Waits up to `timeout` seconds (`None`: no limit) for a hold; raises `WaitTimeout`.
                    #[pyo3(signature = (timeout=None))]
                    fn acquire / acquire_async(
                        &self,
                        timeout: Option<&pyo3::Bound<'_, pyo3::PyAny>>,
                    ) -> $crate::guards::NewGuard<$guard> {
                        let (lock, wait) = (self.inner.clone(), $crate::convert::wait_of(timeout)?);
                        async move { lock.acquire(wait).await.map($crate::guards::NewGuard::of) }
                    }
                )?
                $($($twins)*)?
            }
            plain {
                $(
                    #[new]
                    #[pyo3(signature = ($($argument,)* url=None, options=None))]
                    fn new(
                        py: pyo3::Python<'_>,
                        $($argument: &pyo3::Bound<'_, pyo3::PyAny>,)*
                        url: Option<&pyo3::Bound<'_, pyo3::PyAny>>,
                        options: Option<&$crate::lock_options::PyLockOptions>,
                    ) -> pyo3::PyResult<Self> {
                        let ($store, $options) = $crate::lock_options::lock_parts(py, url, options)?;
                        let inner = $build.map_err($crate::errors::to_py)?;
                        Ok($class { inner })
                    }
                )?
                $($($plain)*)?
            }
        }
    };
}

pub(crate) use lock_handle_pymethods;
