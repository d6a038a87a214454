//! The self-join cut into buckets, for `simdex.spark` (and any engine that shuffles): which
//! design, each fingerprint's bucket per table, a bucket's pairs, and connected components.

use numpy::PyArray1;
use pyo3::prelude::*;
use simdex::dedup::Clusters;

use crate::args::{Distance, Threads};
use simdex::Design;

use crate::arrays::{out, u64_array};
use crate::errors::to_py;
use crate::runtime::detached;

/// The name of the radius-0 design a distributed self-join of `n` fingerprints at distance `k`
/// should use, and its number of tables; with `name`, that design (checked: radius 0).
#[pyfunction]
#[pyo3(signature = (n, k, name=None))]
pub fn join_design(n: u64, k: u32, name: Option<&str>) -> PyResult<(String, usize)> {
    let d = match name {
        None => simdex::Design::for_join(n, k).map_err(to_py)?,
        Some(name) => {
            let d = design(name, k)?;
            simdex::Design::check_join(&d).map_err(to_py)?;
            d
        }
    };
    Ok((d.name().to_string(), d.tables().len()))
}

fn design(name: &str, k: u32) -> PyResult<Design> {
    Design::by_name(name, k).map_err(to_py)
}

/// The bucket (permuted prefix) of every fingerprint in table `table` of design `design`.
#[pyfunction]
#[pyo3(signature = (fingerprints, design, k, table))]
pub fn bucket_keys<'py>(
    py: Python<'py>,
    fingerprints: &Bound<'py, PyAny>,
    design: &str,
    k: u32,
    table: usize,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let d = self::design(design, k)?;
    let arr = u64_array(fingerprints, "fingerprints")?;
    let fps = arr.as_slice()?;
    let keys = detached(py, None, move || d.bucket_keys(table, fps))?;
    Ok(out(py, keys))
}

/// Pairs: (index a, index b, distance) arrays.
type Pairs<'py> = (
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u32>>,
    Bound<'py, PyArray1<u32>>,
);

/// Table `table`'s share of the self-join of `fingerprints` (several buckets may be mixed):
/// every (i, j, distance) within k, fingerprint i < fingerprint j, that no earlier table
/// covers.
#[pyfunction]
#[pyo3(signature = (fingerprints, design, k, table))]
pub fn bucket_pairs<'py>(
    py: Python<'py>,
    fingerprints: &Bound<'py, PyAny>,
    design: &str,
    k: u32,
    table: usize,
) -> PyResult<Pairs<'py>> {
    let d = self::design(design, k)?;
    let arr = u64_array(fingerprints, "fingerprints")?;
    let fps = arr.as_slice()?;
    let pairs = detached(py, None, move || d.bucket_pairs(table, k, fps))?;
    let (mut a, mut b, mut c) = (Vec::new(), Vec::new(), Vec::new());
    for (i, j, dist) in pairs {
        a.push(i);
        b.push(j);
        c.push(dist);
    }
    Ok((out(py, a), out(py, b), out(py, c)))
}

/// (nodes, the root of each).
type Labels<'py> = (Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<u64>>);

/// Connected components of the graph with edges `a[i] - b[i]` (any 64-bit node labels):
/// (nodes ascending, the smallest node of each one's component).
#[pyfunction]
pub fn components<'py>(
    py: Python<'py>,
    a: &Bound<'py, PyAny>,
    b: &Bound<'py, PyAny>,
) -> PyResult<Labels<'py>> {
    let (a, b) = (u64_array(a, "a")?, u64_array(b, "b")?);
    let (a, b) = (a.as_slice()?, b.as_slice()?);
    if a.len() != b.len() {
        return Err(crate::errors::invalid(format!(
            "a ({}) and b ({}) differ in length",
            a.len(),
            b.len()
        )));
    }
    let (nodes, roots) = detached(py, None, move || {
        let mut nodes: Vec<u64> = a.iter().chain(b).copied().collect();
        nodes.sort_unstable();
        nodes.dedup();
        let at = |x: u64| nodes.binary_search(&x).expect("every end is a node");
        // Union-find over positions; the root is the smallest position, so the smallest node.
        let mut clusters = Clusters::new(nodes.len());
        for (&x, &y) in a.iter().zip(b) {
            clusters.join(at(x), at(y));
        }
        let roots: Vec<u64> = (0..nodes.len()).map(|i| nodes[clusters.find(i)]).collect();
        Ok((nodes, roots))
    })?;
    Ok((out(py, nodes), out(py, roots)))
}

/// Share `part` of `parts` of the block join of distinct fingerprints beyond an index's k
/// (`simdex::dedup::wide_join_part`, the candidates of verified dedup as `simdex dedup --verify` finds
/// them): the pairs within `k` bits whose smaller fingerprint is `fingerprints[i]` with
/// i ≡ part (mod parts), as (a, b, distance) with a < b.
#[pyfunction]
#[pyo3(signature = (fingerprints, k, part, parts))]
pub fn wide_pairs<'py>(
    py: Python<'py>,
    fingerprints: &Bound<'py, PyAny>,
    k: Distance,
    part: usize,
    parts: usize,
) -> PyResult<WidePairs<'py>> {
    let arr = u64_array(fingerprints, "fingerprints")?;
    let fps = arr.as_slice()?;
    let k = k.0;
    let (a, b, c) = detached(py, Some(Threads(1)), move || {
        let pairs = simdex::dedup::Candidates::wide_join_part(
            fps,
            k,
            part,
            parts,
            &simdex::ProgressHandle::none(),
        )?;
        Ok(pairs
            .into_iter()
            .map(|p| (p.batch, p.stored, p.distance))
            .collect::<(Vec<u64>, Vec<u64>, Vec<u32>)>())
    })?;
    Ok((out(py, a), out(py, b), out(py, c)))
}

/// (a, b, distance) arrays of fingerprint pairs.
type WidePairs<'py> = (
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u64>>,
    Bound<'py, PyArray1<u32>>,
);
