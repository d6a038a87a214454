//! numpy arrays in and out: fingerprints and ids are `uint64`, read in place.

use numpy::{PyArray1, PyReadonlyArray1, PyUntypedArrayMethods};
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

/// A 1-D, C-contiguous `uint64` array, borrowed read-only (no copy); a `TypeError` naming
/// `what` otherwise.
pub fn u64_array<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<PyReadonlyArray1<'py, u64>> {
    let arr = obj.extract::<PyReadonlyArray1<'py, u64>>().map_err(|_| {
        let ndim = obj.getattr("ndim").and_then(|n| n.extract::<usize>()).ok();
        let got = obj
            .getattr("dtype")
            .map(|d| match ndim {
                Some(n) if n != 1 => format!("a {n}-D array of dtype {d}"),
                _ => format!("an array of dtype {d}"),
            })
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

/// Document ids: a `uint64` array read in place, or an `int64` array (numpy's default integer)
/// copied once if no id is negative.
pub enum Ids<'py> {
    Borrowed(PyReadonlyArray1<'py, u64>),
    Converted(Vec<u64>),
}

impl Ids<'_> {
    pub fn as_slice(&self) -> PyResult<&[u64]> {
        match self {
            Ids::Borrowed(a) => Ok(a.as_slice()?),
            Ids::Converted(v) => Ok(v),
        }
    }
}

/// [`u64_array`], or an `int64` array of non-negative ids.
pub fn id_array<'py>(obj: &Bound<'py, PyAny>, what: &str) -> PyResult<Ids<'py>> {
    if let Ok(a) = obj.extract::<PyReadonlyArray1<'py, i64>>() {
        let v = a.as_array();
        if let Some(pos) = v.iter().position(|&x| x < 0) {
            return Err(crate::errors::invalid(format!(
                "{what}[{pos}] = {} is negative: document ids are 0..2**64",
                v[pos]
            )));
        }
        return Ok(Ids::Converted(v.iter().map(|&x| x as u64).collect()));
    }
    u64_array(obj, what).map(Ids::Borrowed)
}

/// Hand a vector to numpy without copying.
pub fn out<'py, T: numpy::Element>(py: Python<'py>, v: Vec<T>) -> Bound<'py, PyArray1<T>> {
    numpy::IntoPyArray::into_pyarray(v, py)
}
