//! Texts as the engine reads them: Python strings copied out, or an Arrow string array read in
//! place; each text to its fingerprint, or to its distinct features for document frequencies.

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3_arrow::input::AnyArray;

use crate::errors::invalid;
use crate::runtime::Cancel;
use rayon::prelude::*;
use simdex::{DfCounter, Simhasher};

/// The text to hash: an HTML page's visible text, or the text itself.
pub fn visible(text: &str, html: bool) -> std::borrow::Cow<'_, str> {
    if html {
        std::borrow::Cow::Owned(simdex::Simhasher::visible_text(text))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// One document's fingerprint, and whether it had no features at all (empty or punctuation
/// only: its fingerprint 0 says nothing about similarity).
pub fn hash_one(h: &Simhasher, text: &str, html: bool) -> (u64, bool) {
    match h.try_hash_text(&visible(text, html)) {
        Some(fp) => (fp, false),
        None => (0, true),
    }
}

/// Where a batch of texts lives: Python strings copied out, or the chunks of an Arrow string
/// array imported through the Arrow PyCapsule interface (`__arrow_c_array__` or
/// `__arrow_c_stream__`: pyarrow, polars, DuckDB, nanoarrow...), held for the call and read in
/// place. Every chunk is validated in full (offsets inside the data, UTF-8) when it is taken, so
/// reading it afterwards cannot go out of bounds whatever the producer handed over.
pub enum Texts {
    Owned(Vec<String>),
    Arrow {
        chunks: Vec<ArrayRef>,
        /// Row number of each chunk's first row.
        starts: Vec<usize>,
        len: usize,
    },
}

impl Texts {
    /// Texts from any Python object that holds them: an Arrow producer (anything with
    /// `__arrow_c_array__` or `__arrow_c_stream__`), or a sequence of str (None is empty text;
    /// a numpy array of str or object included). One str, bytes, or a numpy array of numbers is
    /// a TypeError: iterating it would hash characters or numbers.
    pub fn from_py(obj: &Bound<'_, PyAny>) -> PyResult<Texts> {
        if obj.hasattr("__arrow_c_stream__")? || obj.hasattr("__arrow_c_array__")? {
            return Texts::arrow(obj.extract::<AnyArray>()?);
        }
        let kind = |o: &Bound<'_, PyAny>| -> PyResult<Option<String>> {
            o.getattr("dtype")
                .and_then(|d| d.getattr("kind"))
                .map(|k| k.extract().ok())
                .or(Ok(None))
        };
        let not_texts = match obj {
            o if o.is_instance_of::<pyo3::types::PyString>() => Some("a single str"),
            o if o.is_instance_of::<pyo3::types::PyBytes>() => Some("bytes"),
            o if o.hasattr("dtype")? && !matches!(kind(o)?.as_deref(), Some("U" | "O")) => {
                Some("an array of numbers")
            }
            _ => None,
        };
        if let Some(what) = not_texts {
            return Err(PyTypeError::new_err(format!(
                "texts must be a sequence of str or an Arrow string array, not {what}"
            )));
        }
        let v: Vec<Option<String>> = obj.extract().map_err(|_| {
            PyTypeError::new_err(
                "texts must be a sequence of str (None for empty text) or an Arrow string array",
            )
        })?;
        Ok(Texts::Owned(
            v.into_iter().map(Option::unwrap_or_default).collect(),
        ))
    }

    /// The texts of an Arrow array or stream of strings: `string`, `large_string`,
    /// `string_view`, or a dictionary of one of these (decoded to `large_string`).
    pub fn arrow(a: AnyArray) -> PyResult<Texts> {
        let reader = a.into_reader()?;
        let mut chunks = Vec::new();
        let mut starts = Vec::new();
        let mut len = 0usize;
        for chunk in reader {
            let chunk = chunk.map_err(|e| invalid(format!("reading the Arrow stream: {e}")))?;
            let chunk = match chunk.data_type() {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => chunk,
                DataType::Dictionary(_, v)
                    if matches!(
                        **v,
                        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View
                    ) =>
                {
                    arrow_cast::cast(&chunk, &DataType::LargeUtf8)
                        .map_err(|e| invalid(format!("decoding an Arrow dictionary: {e}")))?
                }
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "texts must be an Arrow array of strings, got Arrow type {other}"
                    )));
                }
            };
            chunk
                .to_data()
                .validate_full()
                .map_err(|e| invalid(format!("invalid Arrow string array: {e}")))?;
            starts.push(len);
            len += chunk.len();
            chunks.push(chunk);
        }
        Ok(Texts::Arrow {
            chunks,
            starts,
            len,
        })
    }

    pub fn len(&self) -> usize {
        match self {
            Texts::Owned(v) => v.len(),
            Texts::Arrow { len, .. } => *len,
        }
    }

    /// True if text `i` is an Arrow null or a Python None (read as empty text).
    pub fn is_null(&self, i: usize) -> bool {
        match self {
            Texts::Owned(_) => false,
            Texts::Arrow { chunks, starts, .. } => {
                let c = starts.partition_point(|&s| s <= i) - 1;
                chunks[c].is_null(i - starts[c])
            }
        }
    }

    /// Text `i` (a null is empty text).
    pub fn get(&self, i: usize) -> &str {
        match self {
            Texts::Owned(v) => &v[i],
            Texts::Arrow { chunks, starts, .. } => {
                let c = starts.partition_point(|&s| s <= i) - 1;
                let (a, j) = (&chunks[c], i - starts[c]);
                if a.is_null(j) {
                    return "";
                }
                match a.data_type() {
                    DataType::Utf8 => a.as_string::<i32>().value(j),
                    DataType::LargeUtf8 => a.as_string::<i64>().value(j),
                    _ => a.as_string_view().value(j),
                }
            }
        }
    }
}

pub fn hash_all(
    texts: &Texts,
    h: &Simhasher,
    html: bool,
    cancel: &Cancel,
) -> simdex::Result<(Vec<u64>, Vec<bool>)> {
    let r: Vec<(u64, bool)> = (0..texts.len())
        .into_par_iter()
        .with_min_len(64)
        .map(|i| {
            cancel.check()?;
            Ok(hash_one(h, texts.get(i), html))
        })
        .collect::<simdex::Result<_>>()?;
    Ok(r.into_iter().unzip())
}

/// Document frequencies of the texts' features (unweighted hasher `h`), on all cores.
/// Only the texts `keep(row, text)` accepts (the text as tokenized) are counted.
pub fn doc_freqs(
    texts: &Texts,
    h: &Simhasher,
    html: bool,
    keep: impl Fn(usize, &str) -> bool + Sync,
    cancel: &Cancel,
) -> simdex::Result<DfCounter> {
    (0..texts.len())
        .into_par_iter()
        .with_min_len(64)
        .try_fold(DfCounter::default, |mut c, i| {
            cancel.check()?;
            let text = visible(texts.get(i), html);
            if !keep(i, &text) {
                return Ok(c);
            }
            let f: Vec<u64> = h.features(&text).into_iter().map(|(f, _)| f).collect();
            c.add(&f);
            Ok(c)
        })
        .try_reduce(DfCounter::default, |mut a, b| {
            a.merge(b);
            Ok(a)
        })
}

/// The IDF sample digest (`simdex::raw::text_digest`) of each text's tokenized text.
pub fn digests(texts: &Texts, html: bool, cancel: &Cancel) -> simdex::Result<Vec<u64>> {
    (0..texts.len())
        .into_par_iter()
        .with_min_len(256)
        .map(|i| {
            cancel.check()?;
            Ok(simdex::IdfSample::digest(&visible(texts.get(i), html)))
        })
        .collect()
}

/// IDF weights learned from the corpus's sample (`simdex::IdfSample`): every text
/// digested, then only the sample's tokenized, on all cores.
pub fn learn_idf(
    texts: &Texts,
    h: &Simhasher,
    shingle: usize,
    html: bool,
    cancel: &Cancel,
) -> simdex::Result<simdex::IdfTable> {
    let d = digests(texts, html, cancel)?;
    let n = d.len() as u64;
    let bound = simdex::IdfSample::bound_of(&d, simdex::IdfSample::DOCS);
    let keep = |i: usize, _: &str| bound.is_none_or(|b| d[i] <= b);
    Ok(doc_freqs(texts, h, html, keep, cancel)?.finish_for(shingle, n))
}
