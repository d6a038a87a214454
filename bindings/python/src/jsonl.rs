//! JSON Lines for the Spark job: lines read as text on the executors, parsed by the library's
//! rule (`simdex::raw::parse_bytes`), so that Spark and `simdex dedup --jsonl` agree on every
//! document and on every bad line's reason.

use pyo3::prelude::*;
use simdex::raw::Line;

use crate::texts::Texts;

/// (ids, texts, reasons, blank) of each line (a sequence of str or an Arrow string array):
/// a document has an id and a text, a bad line a reason, a blank line none of them.
type Parsed = (
    Vec<Option<String>>,
    Vec<Option<String>>,
    Vec<Option<String>>,
    Vec<bool>,
);

/// Apply the JSON Lines rule to each line: internal, the read stage of `simdex.spark`.
#[pyfunction]
pub fn parse_jsonl(py: Python<'_>, lines: &Bound<'_, PyAny>) -> PyResult<Parsed> {
    let lines = Texts::from_py(lines)?;
    crate::runtime::detached(py, Some(crate::args::Threads(1)), move || {
        let n = lines.len();
        let mut out: Parsed = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for i in 0..n {
            let line = lines.get(i);
            let (id, text, why, blank) = match simdex::raw::Line::parse(line) {
                Line::Doc { id, text } => (Some(id), Some(text), None, false),
                Line::Bad(why) => (Some(simdex::raw::Line::label(line)), None, Some(why), false),
                _ => (None, None, None, true),
            };
            out.0.push(id);
            out.1.push(text);
            out.2.push(why);
            out.3.push(blank);
        }
        Ok(out)
    })
}
