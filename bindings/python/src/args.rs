//! Arguments checked at the boundary: integers (a negative or absurd value is a
//! `simdex.InvalidArgument` naming the argument, never a raw OverflowError or a thread per unit)
//! and document ids.

use pyo3::prelude::*;
use pyo3::types::PyInt;

use simdex::DocId;

use crate::arrays::id_array;
use crate::errors::invalid;
use crate::texts::Texts;

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

/// Document ids from Python under the one id rule (format-spec/simhash.md, "Document ids"): a
/// uint64/int64 array or ints are numeric ids; a str is a numeric id when it is a canonical
/// decimal ("5" is the id 5, as in the CLI's JSON Lines), else a string id. None, an Arrow null,
/// a negative number or another type is an error naming its position.
pub(crate) fn doc_ids(ids: &Bound<'_, PyAny>) -> PyResult<Vec<DocId>> {
    use pyo3::types::{PyInt, PyString};
    if ids.hasattr("dtype")? {
        let kind: Option<String> = ids
            .getattr("dtype")
            .and_then(|d| d.getattr("kind"))
            .and_then(|k| k.extract())
            .ok();
        if matches!(kind.as_deref(), Some("i" | "u")) {
            let a = id_array(ids, "ids")?;
            return Ok(a.as_slice()?.iter().map(|&n| DocId::Num(n)).collect());
        }
    }
    if ids.hasattr("__arrow_c_stream__")? || ids.hasattr("__arrow_c_array__")? {
        let t = Texts::from_py(ids)?;
        return (0..t.len())
            .map(|i| match t.is_null(i) {
                true => Err(invalid(format!(
                    "ids[{i}] is null: every document needs an id"
                ))),
                false => Ok(DocId::parse(t.get(i))),
            })
            .collect();
    }
    let type_error = || {
        pyo3::exceptions::PyTypeError::new_err(
            "ids must be a uint64/int64 numpy array, a sequence of int or str, or an Arrow \
             string array",
        )
    };
    if ids.is_instance_of::<PyString>() || ids.is_instance_of::<pyo3::types::PyBytes>() {
        return Err(type_error());
    }
    let mut out = Vec::new();
    for (i, item) in ids.try_iter().map_err(|_| type_error())?.enumerate() {
        let item = item?;
        if item.is_none() {
            return Err(invalid(format!(
                "ids[{i}] is None: every document needs an id"
            )));
        }
        if item.is_instance_of::<PyString>() {
            out.push(DocId::parse(&item.extract::<String>()?));
        } else if item.is_instance_of::<PyInt>() {
            let n: u64 = item.extract().map_err(|_| {
                invalid(format!("ids[{i}] = {item} is not a document id (0..2**64)"))
            })?;
            out.push(DocId::Num(n));
        } else if let Ok(n) = item.extract::<u64>() {
            out.push(DocId::Num(n)); // a numpy integer scalar
        } else {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "ids[{i}] is a {}: ids are int or str",
                item.get_type().name()?
            )));
        }
    }
    Ok(out)
}
