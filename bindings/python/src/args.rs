//! Integer arguments checked at the boundary: a negative or absurd value is a
//! `simdex.InvalidArgument` naming the argument, never a raw OverflowError or a thread per unit.

use pyo3::prelude::*;
use pyo3::types::PyInt;

use crate::errors::invalid;

/// Any Python integer (an int, or anything with `__index__`, such as numpy's integers) as i128
/// (bigger ones saturate); a TypeError for anything else, bool included.
fn int(obj: &Borrowed<'_, '_, PyAny>, name: &str) -> PyResult<i128> {
    let not_int = || -> PyResult<PyErr> {
        Ok(pyo3::exceptions::PyTypeError::new_err(format!(
            "{name} must be an int, not {}",
            obj.get_type().name()?
        )))
    };
    if obj.is_instance_of::<pyo3::types::PyBool>() {
        return Err(not_int()?);
    }
    let v = if obj.is_instance_of::<PyInt>() {
        (**obj).clone()
    } else {
        match obj.call_method0("__index__") {
            Ok(v) => v,
            Err(_) => return Err(not_int()?),
        }
    };
    match v.extract::<i128>() {
        Ok(n) => Ok(n),
        Err(_) => Ok(if v.lt(0)? { i128::MIN } else { i128::MAX }),
    }
}

/// `threads=`: at least 1 (the pool that runs a call lowers more than the machine's cores to
/// them).
#[derive(Clone, Copy, Debug)]
pub struct Threads(pub usize);

impl<'a, 'py> FromPyObject<'a, 'py> for Threads {
    type Error = PyErr;
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Threads> {
        let n = int(&obj, "threads")?;
        if n < 1 {
            return Err(invalid(format!(
                "threads = {n}: give at least 1 (or None for every core)"
            )));
        }
        Ok(Threads(usize::try_from(n).unwrap_or(usize::MAX)))
    }
}

/// A Hamming distance `k`: 0..=64 (whether the index answers it is the engine's check).
#[derive(Clone, Copy, Debug)]
pub struct Distance(pub u32);

impl<'a, 'py> FromPyObject<'a, 'py> for Distance {
    type Error = PyErr;
    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Distance> {
        let k = int(&obj, "k")?;
        if !(0..=64).contains(&k) {
            return Err(invalid(format!(
                "k = {k} is not a Hamming distance between 64-bit fingerprints (0..=64)"
            )));
        }
        Ok(Distance(k as u32))
    }
}
