//! Document stores: ingest and check texts under string ids, delete documents, and the
//! fingerprint of a text under a store's recipe.

use std::ffi::c_char;

use simdex::{DocId, Document, Expiry, IngestOptions, SimhashOptions, Simhasher};

use crate::ffi::*;
use crate::results::{simdex_verdicts, verdicts_into_raw};
use crate::store::{simdex_store, store_arg};

/// Documents per engine call: the unit between two checks of a cancel token.
const CHUNK: usize = 4096;

/// Compare each document with the stored ones only, not with the earlier documents of the same
/// call (for callers that deduplicate a batch themselves).
pub const SIMDEX_INGEST_STORE_ONLY: u32 = 1;

/// Ids under the id rule: a canonical decimal is a numeric id, anything else a string id. Each
/// is checked here, before any is stored, so that an error names its place in the caller's
/// array (the engine, given them a chunk at a time, would name its place in the chunk).
unsafe fn doc_ids(ids: *const simdex_str, n: usize) -> Result<Vec<DocId>> {
    let raw = unsafe { slice(ids, n, "ids") }?;
    let mut out = Vec::with_capacity(n);
    for (i, s) in raw.iter().enumerate() {
        let id = DocId::parse(unsafe { text(s, &|| format!("ids[{i}]")) }?);
        id.check().map_err(|e| match e {
            simdex::Error::InvalidArgument(m) => {
                simdex::Error::InvalidArgument(format!("ids[{i}]: {m}"))
            }
            e => e,
        })?;
        out.push(id);
    }
    Ok(out)
}

/// Check or ingest, chunk by chunk.
#[allow(clippy::too_many_arguments)]
unsafe fn documents(
    store: *const simdex_store,
    ids: *const simdex_str,
    texts: *const simdex_str,
    n: usize,
    verify: f64,
    k: u32,
    flags: u32,
    cancel: *const simdex_cancel,
    out: *mut *mut simdex_verdicts,
    err: *mut *mut c_char,
    write: bool,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            let slot = crate::ffi::out(out, "out")?;
            if flags & !SIMDEX_INGEST_STORE_ONLY != 0 {
                return invalid(format!("unknown ingest flags {flags:#x}"));
            }
            let ids = doc_ids(ids, n)?;
            let raw = slice(texts, n, "texts")?;
            let mut ts = Vec::with_capacity(n);
            for (i, t) in raw.iter().enumerate() {
                ts.push(text(t, &|| format!("texts[{i}]"))?);
            }
            let opts = IngestOptions::default()
                .with_k((k != crate::ffi::SIMDEX_K_DEFAULT).then_some(k))
                .with_verify((!verify.is_nan()).then_some(verify))
                .with_store_only(flags & SIMDEX_INGEST_STORE_ONLY != 0);
            let writer = match write {
                true => Some(s.inner.writer()?),
                false => None,
            };
            let call = s.calls.register(cancel)?;
            let mut all = Vec::with_capacity(n);
            for (c, t) in ids.chunks(CHUNK).zip(ts.chunks(CHUNK)) {
                call.watch.check()?;
                let docs: Vec<Document<'_>> = c
                    .iter()
                    .zip(t)
                    .map(|(id, text)| Document { id, text })
                    .collect();
                all.extend(match writer {
                    Some(w) => w.ingest(&docs, &opts)?,
                    None => s.inner.check_documents(&docs, &opts)?,
                });
            }
            *slot = verdicts_into_raw(all);
            Ok(())
        })
    }
}

/// Check each of `n` documents (`ids[i]`, `texts[i]`) against everything stored before it,
/// the earlier documents of this call included, and store the new ones; a document under an id
/// already stored replaces it and is never compared with its old version. `verify`: the word
/// 3-shingle Jaccard similarity a duplicate must reach (exact in a store created with
/// `simdex_store_options_set_exact` at or below it, else estimated; NaN: every candidate within
/// `k` bits is a duplicate). `k`: candidates' largest distance (`SIMDEX_K_DEFAULT`: the store's).
/// `flags`: 0 or `SIMDEX_INGEST_STORE_ONLY`. `*out` gets the verdicts in input order, for
/// `simdex_verdicts_free`. Durable as the sync policy says when it returns. Cancellable between
/// chunks of 4,096 documents (earlier chunks stay stored). Thread-safe: concurrent calls on one
/// store are checked one after the other.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_ingest(
    store: *const simdex_store,
    ids: *const simdex_str,
    texts: *const simdex_str,
    n: usize,
    verify: f64,
    k: u32,
    flags: u32,
    cancel: *const simdex_cancel,
    out: *mut *mut simdex_verdicts,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        documents(
            store, ids, texts, n, verify, k, flags, cancel, out, err, true,
        )
    }
}

/// The verdicts `simdex_store_ingest` would give, without storing anything (also on a store
/// open read-only): "which of these do we already have?". Cancellable; thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_check(
    store: *const simdex_store,
    ids: *const simdex_str,
    texts: *const simdex_str,
    n: usize,
    verify: f64,
    k: u32,
    flags: u32,
    cancel: *const simdex_cancel,
    out: *mut *mut simdex_verdicts,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        documents(
            store, ids, texts, n, verify, k, flags, cancel, out, err, false,
        )
    }
}

/// Delete each of `n` documents by the id it was ingested under; `*deleted` (may be NULL) is
/// how many were stored. Cancellable between chunks of 4,096 ids. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_delete_documents(
    store: *const simdex_store,
    ids: *const simdex_str,
    n: usize,
    cancel: *const simdex_cancel,
    deleted: *mut u64,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            let ids = doc_ids(ids, n)?;
            let w = s.inner.writer()?;
            let call = s.calls.register(cancel)?;
            let mut count = 0;
            for c in ids.chunks(CHUNK) {
                call.watch.check()?;
                count += w.delete_documents(c)?;
            }
            if !deleted.is_null() {
                *deleted = count;
            }
            Ok(())
        })
    }
}

/// The id a document was ingested under, for the store id a query returned (`simdex_store_near`
/// and `simdex_store_near_many` answer with store ids: a string id's is the store's own number
/// for it). It is written to `buf` (`cap` bytes, not NUL-terminated; NULL when `cap` is 0) and
/// `*len` is set to its length: when `*len > cap`, call again with a larger buffer. `*found` is
/// 0 (and `*len` 0) when no document is stored under `id`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_document_id(
    store: *const simdex_store,
    id: u64,
    buf: *mut c_char,
    cap: usize,
    len: *mut usize,
    found: *mut i32,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            let out = slice_mut(buf.cast::<u8>(), cap, "buf")?;
            let n = crate::ffi::out(len, "len")?;
            let f = crate::ffi::out(found, "found")?;
            if s.inner.recipe().is_none() {
                return invalid("a store of raw fingerprints keeps no document ids");
            }
            // A string id is kept with its document; a numeric one is the store id itself.
            let name = match s.inner.doc_key(id)? {
                Some(k) => Some(k.to_string()),
                None => s.inner.doc_id(&DocId::Num(id))?.map(|_| id.to_string()),
            };
            let bytes = name.as_deref().unwrap_or("").as_bytes();
            let take = bytes.len().min(cap);
            out[..take].copy_from_slice(&bytes[..take]);
            *n = bytes.len();
            *f = name.is_some() as i32;
            Ok(())
        })
    }
}

/// `simdex_store_expire`: documents stored before `bound` milliseconds since the Unix epoch (by
/// the writer's clock; a document ingested again was stored when it was ingested again).
pub const SIMDEX_EXPIRE_STORED_BEFORE: u32 = 1;
/// `simdex_store_expire`: documents whose sequence number is below `bound` (the store's
/// documents are numbered 1, 2, ... in the order they were stored).
pub const SIMDEX_EXPIRE_SEQ_BELOW: u32 = 2;

/// Delete every document `by` and `bound` cover (a `SIMDEX_EXPIRE_` kind); `*expired` (may be
/// NULL) is how many. Only a store created with exact verification knows when its documents
/// were stored; on others this is an argument error (delete by id instead). The next
/// compaction reclaims their space; no answer names them from the call on. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_expire(
    store: *const simdex_store,
    by: u32,
    bound: u64,
    expired: *mut u64,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            let expiry = match by {
                SIMDEX_EXPIRE_STORED_BEFORE => Expiry::StoredBefore(bound),
                SIMDEX_EXPIRE_SEQ_BELOW => Expiry::SeqBelow(bound),
                other => return invalid(format!("unknown expiry kind {other}")),
            };
            let n = s.inner.writer()?.expire(expiry)?;
            if !expired.is_null() {
                *expired = n;
            }
            Ok(())
        })
    }
}

/// The fingerprint a document store gives `text` (`len` bytes of UTF-8) under its recipe: the
/// one `simdex_store_ingest` stores, for `simdex_store_near`. `*has_words` (may be NULL) is 0
/// for a text without words, whose fingerprint is 0 and which ingest calls empty. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_simhash(
    store: *const simdex_store,
    text: *const c_char,
    len: usize,
    fingerprint: *mut u64,
    has_words: *mut i32,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            let s = store_arg(store)?;
            let t = crate::ffi::text(&simdex_str { ptr: text, len }, &|| "text".into())?;
            let fp = crate::ffi::out(fingerprint, "fingerprint")?;
            let Some(r) = s.inner.recipe() else {
                return invalid("a store of raw fingerprints has no recipe to hash texts with");
            };
            let hasher = Simhasher::new(
                SimhashOptions::default()
                    .with_shingle(r.shingle())
                    .with_weights(r.weights().cloned()),
            )?;
            let visible;
            let t = match r.html() {
                true => {
                    visible = Simhasher::visible_text(t);
                    visible.as_str()
                }
                false => t,
            };
            let h = hasher.try_hash_text(t);
            *fp = h.unwrap_or(0);
            if !has_words.is_null() {
                *has_words = h.is_some() as i32;
            }
            Ok(())
        })
    }
}
