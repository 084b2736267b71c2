//! `pymethods_with_async_twins!`: a `#[pymethods]` block in which a method written once becomes two
//! Python methods, the blocking `x` (the GIL released while it waits) and its asyncio twin `x_async` (an
//! awaitable). The body converts the arguments (so a bad one raises at once in both forms) and answers
//! the core call as a future; the macro only decides how that future is waited for.

/// Writes `#[pymethods] impl $class` with, for every `fn name / name_async(&self, args) -> T { body }`,
/// a blocking `name` answering `T` and an asyncio `name_async` answering an awaitable of `T`. `body`
/// evaluates to a `Future<Output = ratelock::Result<T>> + Send + 'static`. The doc comments go on the
/// blocking method and a `#[pyo3(...)]` attribute (a signature) on both. Items in the trailing
/// `plain { ... }` block are copied into the `#[pymethods]` block as they are (pyo3 allows one such
/// block per class).
macro_rules! pymethods_with_async_twins {
    (
        impl $class:ident {
            $(
                $(#[doc = $doc:literal])*
                $(#[pyo3 $options:tt])?
                fn $name:ident / $twin:ident
                (&$self:ident $(, $arg:ident : $arg_type:ty)* $(,)?) -> $answer:ty $body:block
            )*
        }
        $(plain { $($plain:tt)* })?
    ) => {
        #[pyo3::pymethods]
        impl $class {
            $(
                $(#[doc = $doc])*
                $(#[pyo3 $options])?
                fn $name(&$self, py: pyo3::Python<'_> $(, $arg: $arg_type)*) -> pyo3::PyResult<$answer> {
                    $crate::runtime::run::<$answer, _>(py, $body)
                }

                #[doc = concat!("`", stringify!($name), "` for asyncio: an awaitable of its answer.")]
                $(#[pyo3 $options])?
                fn $twin<'py>(
                    &$self,
                    py: pyo3::Python<'py>
                    $(, $arg: $arg_type)*
                ) -> pyo3::PyResult<pyo3::Bound<'py, pyo3::PyAny>> {
                    $crate::runtime::awaitable::<$answer, _>(py, $body)
                }
            )*
            $($($plain)*)?
        }
    };
}

pub(crate) use pymethods_with_async_twins;
