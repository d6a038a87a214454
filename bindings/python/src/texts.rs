//! Texts as the engine reads them: Python strings copied out, or an Arrow string array read in
//! place; each text to its fingerprint, or to its distinct features for document frequencies.

use pyo3::prelude::*;
use rayon::prelude::*;
use simdex::simhash::{DfCounter, Simhasher, simhash_weighted};

/// The text to hash: an HTML page's visible text, or the text itself.
pub fn visible(text: &str, html: bool) -> std::borrow::Cow<'_, str> {
    if html {
        std::borrow::Cow::Owned(simdex::simhash::html::visible_text(text))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// One document's fingerprint, and whether it had no features at all (empty or punctuation
/// only: its fingerprint 0 says nothing about similarity).
pub fn hash_one(h: &Simhasher, text: &str, html: bool) -> (u64, bool) {
    let feats = h.features(&visible(text, html));
    let empty = feats.is_empty();
    let fp = match &h.options().weights {
        None => simhash_weighted(feats),
        Some(t) => simhash_weighted(feats.into_iter().map(|(f, c)| (f, c * t.weight(f)))),
    };
    (fp, empty)
}

/// Where a batch of texts lives: Python strings copied out, or an Arrow string array read in
/// place.
pub enum Texts<'a> {
    Owned(Vec<String>),
    Arrow {
        offsets: ArrowOffsets<'a>,
        data: &'a [u8],
        valid: Option<&'a [u8]>,
        offset: usize,
        len: usize,
    },
}

pub enum ArrowOffsets<'a> {
    I32(&'a [i32]),
    I64(&'a [i64]),
}

/// An Arrow string array as `simdex._arrow_spec` describes it: (offsets address, data address,
/// data length, validity address or 0, offset, length, large offsets).
#[derive(FromPyObject)]
pub struct ArrowSpec(usize, usize, usize, usize, usize, usize, bool);

impl Texts<'_> {
    /// Texts given either as Python strings or as an Arrow array (exactly one of the two);
    /// `what` names the argument pair in the error.
    ///
    /// # Safety
    /// As for [`Texts::arrow`].
    pub unsafe fn either(
        texts: Option<Vec<String>>,
        arrow: Option<ArrowSpec>,
        what: &str,
    ) -> simdex::Result<Texts<'static>> {
        match (texts, arrow) {
            (Some(v), None) => Ok(Texts::Owned(v)),
            // SAFETY: the caller's contract.
            (None, Some(a)) => unsafe { Texts::arrow(&a) },
            _ => Err(simdex::Error::InvalidArgument(format!(
                "give {what} as texts or as arrow, not both or neither"
            ))),
        }
    }

    /// The texts of an Arrow array, read in place.
    ///
    /// # Safety
    /// The addresses and sizes must be those of a live Arrow string array's buffers (offsets:
    /// offset + length + 1 entries; validity: a bit per entry), alive while the result is.
    pub unsafe fn arrow(spec: &ArrowSpec) -> simdex::Result<Texts<'static>> {
        let &ArrowSpec(offsets_addr, data_addr, data_len, validity_addr, offset, len, large) = spec;
        let bad = |m: &str| simdex::Error::InvalidArgument(m.to_string());
        let n = offset
            .checked_add(len)
            .and_then(|n| n.checked_add(1))
            .ok_or_else(|| bad("Arrow array length overflows"))?;
        if offsets_addr == 0 || (data_addr == 0 && data_len > 0) {
            return Err(bad("Arrow array without offsets or data buffer"));
        }
        // SAFETY: the caller's contract.
        let offsets = unsafe {
            if large {
                ArrowOffsets::I64(std::slice::from_raw_parts(offsets_addr as *const i64, n))
            } else {
                ArrowOffsets::I32(std::slice::from_raw_parts(offsets_addr as *const i32, n))
            }
        };
        let data: &[u8] = if data_len == 0 {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(data_addr as *const u8, data_len) }
        };
        let valid = (validity_addr != 0).then(|| unsafe {
            std::slice::from_raw_parts(validity_addr as *const u8, n.div_ceil(8))
        });
        Ok(Texts::Arrow {
            offsets,
            data,
            valid,
            offset,
            len,
        })
    }

    pub fn len(&self) -> usize {
        match self {
            Texts::Owned(v) => v.len(),
            Texts::Arrow { len, .. } => *len,
        }
    }

    /// Text `i` (a null is empty text); an error for bytes that are not UTF-8 or offsets out
    /// of range.
    pub fn get(&self, i: usize) -> simdex::Result<&str> {
        match self {
            Texts::Owned(v) => Ok(&v[i]),
            Texts::Arrow {
                offsets,
                data,
                valid,
                offset,
                ..
            } => {
                let j = offset + i;
                if let Some(bits) = valid
                    && bits[j / 8] & (1 << (j % 8)) == 0
                {
                    return Ok("");
                }
                let (a, b) = match offsets {
                    ArrowOffsets::I32(o) => (o[j] as i64, o[j + 1] as i64),
                    ArrowOffsets::I64(o) => (o[j], o[j + 1]),
                };
                let bytes = usize::try_from(a)
                    .ok()
                    .zip(usize::try_from(b).ok())
                    .and_then(|(a, b)| data.get(a..b))
                    .ok_or_else(|| {
                        simdex::Error::InvalidArgument(format!(
                            "row {i}: Arrow offsets {a}..{b} outside the data buffer"
                        ))
                    })?;
                std::str::from_utf8(bytes).map_err(|e| {
                    simdex::Error::InvalidArgument(format!("row {i}: not UTF-8 ({e})"))
                })
            }
        }
    }
}

pub fn hash_all(
    texts: &Texts<'_>,
    h: &Simhasher,
    html: bool,
) -> simdex::Result<(Vec<u64>, Vec<bool>)> {
    let r: Vec<(u64, bool)> = (0..texts.len())
        .into_par_iter()
        .with_min_len(64)
        .map(|i| Ok(hash_one(h, texts.get(i)?, html)))
        .collect::<simdex::Result<_>>()?;
    Ok(r.into_iter().unzip())
}

/// Document frequencies of the texts' features (unweighted hasher `h`), on all cores.
pub fn doc_freqs(texts: &Texts<'_>, h: &Simhasher, html: bool) -> simdex::Result<DfCounter> {
    (0..texts.len())
        .into_par_iter()
        .with_min_len(64)
        .try_fold(DfCounter::default, |mut c, i| {
            let f: Vec<u64> = h
                .features(&visible(texts.get(i)?, html))
                .into_iter()
                .map(|(f, _)| f)
                .collect();
            c.add(&f);
            Ok(c)
        })
        .try_reduce(DfCounter::default, |mut a, b| {
            a.merge(b);
            Ok(a)
        })
}
