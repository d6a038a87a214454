//! numpy arrays in and out: fingerprints and ids are `uint64`, read in place.

use numpy::{PyArray1, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A 1-D, C-contiguous `uint64` array, borrowed read-only (no copy); a `TypeError` naming
/// `what` otherwise.
pub fn u64_array<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<PyReadonlyArray1<'py, u64>> {
    let arr = obj.extract::<PyReadonlyArray1<'py, u64>>().map_err(|_| {
        let got = obj
            .getattr("dtype")
            .map(|d| format!("an array of dtype {d}"))
            .unwrap_or_else(|_| {
                obj.get_type()
                    .name()
                    .map(|n| n.to_string())
                    .unwrap_or_else(|_| "something else".into())
            });
        PyTypeError::new_err(format!(
            "{what} must be a 1-D numpy.ndarray of dtype uint64, got {got} \
             (use numpy.asarray(x, dtype=numpy.uint64))"
        ))
    })?;
    if !arr.is_c_contiguous() {
        return Err(PyTypeError::new_err(format!(
            "{what} must be C-contiguous (use numpy.ascontiguousarray)"
        )));
    }
    Ok(arr)
}

/// Hand a vector to numpy without copying.
pub fn out<'py, T: numpy::Element>(py: Python<'py>, v: Vec<T>) -> Bound<'py, PyArray1<T>> {
    numpy::IntoPyArray::into_pyarray(v, py)
}
