//! How a store is opened (or created): an options object with one setter per option, so that
//! options can be added without changing the ABI.

use std::ffi::{CStr, c_char};
use std::path::Path;

use simdex::{CreateOptions, ReadOnlyStore, Recipe, ShapeRequest, SimhashOptions, Store};
use simdex::{StoreOptions, SyncPolicy};

use crate::ffi::*;

/// Options for `simdex_store_open`. Not thread-safe: set them from one thread, then open.
pub struct simdex_store_options {
    magic: u64,
    create: bool,
    read_only: bool,
    k: Option<u32>,
    sync: SyncPolicy,
    max_delta: u64,
    expected_keys: u64,
    documents: bool,
    shingle: Option<usize>,
    html: Option<bool>,
    exact: Option<f64>,
    sample: Vec<String>,
}

impl Tagged for simdex_store_options {
    const MAGIC: u64 = OPTIONS_MAGIC;
    const KIND: &'static str = "simdex_store_options";
    fn magic(&self) -> u64 {
        self.magic
    }
}

impl Default for simdex_store_options {
    fn default() -> Self {
        simdex_store_options {
            magic: OPTIONS_MAGIC,
            create: false,
            read_only: false,
            k: None,
            sync: SyncPolicy::PerWrite,
            max_delta: StoreOptions::default().max_delta,
            expected_keys: CreateOptions::default().expected_keys,
            documents: false,
            shingle: None,
            html: None,
            exact: None,
            sample: Vec::new(),
        }
    }
}

/// New options: open an existing store for reading and writing, every write durable when its
/// call returns (`per-write`). Free with `simdex_store_options_free`.
#[unsafe(no_mangle)]
pub extern "C" fn simdex_store_options_new() -> *mut simdex_store_options {
    Box::into_raw(Box::default())
}

/// Free options (NULL is ignored); a store opened with them does not need them.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_options_free(opts: *mut simdex_store_options) {
    if !opts.is_null() && unsafe { (*opts).magic } == OPTIONS_MAGIC {
        let mut b = unsafe { Box::from_raw(opts) };
        b.magic = 0;
    }
}

/// Set one option; an argument error for options that are not a `simdex_store_options`.
unsafe fn set(
    opts: *mut simdex_store_options,
    f: impl FnOnce(&mut simdex_store_options),
) -> simdex_status {
    unsafe {
        guard(std::ptr::null_mut(), || {
            handle(opts.cast_const(), "the options")?;
            f(&mut *opts);
            Ok(())
        })
    }
}

/// Create the store when `path` holds none (non-zero), with the options below; default 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_options_set_create(
    opts: *mut simdex_store_options,
    create: i32,
) -> simdex_status {
    unsafe { set(opts, |o| o.create = create != 0) }
}

/// Open read-only (non-zero): beside a writer in another process, seeing what it wrote up to the
/// open. Writes fail. Default 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_options_set_read_only(
    opts: *mut simdex_store_options,
    read_only: i32,
) -> simdex_status {
    unsafe { set(opts, |o| o.read_only = read_only != 0) }
}

/// A new store's largest query distance (default 3). Opening an existing store with another
/// k fails rather than ignore it.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_options_set_k(
    opts: *mut simdex_store_options,
    k: u32,
) -> simdex_status {
    unsafe { set(opts, |o| o.k = Some(k)) }
}

/// When writes are durable: `"per-write"` (default: when the call returns; concurrent writers
/// share fsyncs), `"group:<ms>"` (within that many milliseconds) or `"manual"` (at
/// `simdex_store_flush`). `SIMDEX_ERR_INVALID_ARGUMENT` with a message for anything else.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_options_set_sync(
    opts: *mut simdex_store_options,
    policy: *const c_char,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            handle(opts.cast_const(), "the options")?;
            if policy.is_null() {
                return invalid("the sync policy is NULL");
            }
            let Ok(s) = CStr::from_ptr(policy).to_str() else {
                return invalid("the sync policy is not UTF-8");
            };
            (*opts).sync = s.parse()?;
            Ok(())
        })
    }
}

/// Compact when the in-memory delta holds this many writes (default 2^20).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_options_set_max_delta(
    opts: *mut simdex_store_options,
    max_delta: u64,
) -> simdex_status {
    unsafe { set(opts, |o| o.max_delta = max_delta) }
}

/// The fingerprints a new store is expected to grow to, for its design (default 10M).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_options_set_expected_keys(
    opts: *mut simdex_store_options,
    keys: u64,
) -> simdex_status {
    unsafe { set(opts, |o| o.expected_keys = keys) }
}

/// Create a document store (non-zero): it hashes the texts it is given and keeps each
/// document's string id. Opening a store of raw fingerprints with it fails. Default 0.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_options_set_documents(
    opts: *mut simdex_store_options,
    documents: i32,
) -> simdex_status {
    unsafe { set(opts, |o| o.documents = documents != 0) }
}

/// A new document store's shingle size in words for fingerprints (default 2).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_options_set_shingle(
    opts: *mut simdex_store_options,
    shingle: u32,
) -> simdex_status {
    unsafe { set(opts, |o| o.shingle = Some(shingle as usize)) }
}

/// A new document store's texts are HTML (non-zero): fingerprints of their visible text.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_options_set_html(
    opts: *mut simdex_store_options,
    html: i32,
) -> simdex_status {
    unsafe { set(opts, |o| o.html = Some(html != 0)) }
}

/// A new document store keeps every document's word 3-shingle set, so that verification at
/// any threshold of at least `threshold` (0 < T <= 1) is exact. NaN: sketches only (default),
/// whose similarities are estimates.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_options_set_exact(
    opts: *mut simdex_store_options,
    threshold: f64,
) -> simdex_status {
    unsafe {
        set(opts, |o| {
            o.exact = (!threshold.is_nan()).then_some(threshold)
        })
    }
}

/// Texts a new document store learns from (copied): IDF weights for its fingerprints and, with
/// exact verification, the shingle order its candidate filter uses (rare shingles first). Up to
/// a few thousand typical documents; without them the store weighs by counts and orders by hash.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn simdex_store_options_add_sample(
    opts: *mut simdex_store_options,
    texts: *const simdex_str,
    n: usize,
    err: *mut *mut c_char,
) -> simdex_status {
    unsafe {
        guard(err, || {
            handle(opts.cast_const(), "the options")?;
            let ts = slice(texts, n, "texts")?;
            let mut add = Vec::with_capacity(n);
            for (i, t) in ts.iter().enumerate() {
                add.push(text(t, &|| format!("texts[{i}]"))?.to_string());
            }
            (*opts).sample.extend(add);
            Ok(())
        })
    }
}

impl simdex_store_options {
    /// The store at `path` as these options say: created first when asked and missing, then
    /// checked against the options that describe a new store (a mismatch is an error, never
    /// ignored).
    pub(crate) fn open(
        &self,
        path: &Path,
        progress: simdex::ProgressHandle,
    ) -> Result<crate::store::Opened> {
        if self.create && self.read_only {
            return invalid("create and read_only exclude each other");
        }
        if !self.documents
            && (self.html.is_some()
                || self.shingle.is_some()
                || self.exact.is_some()
                || !self.sample.is_empty())
        {
            return invalid(
                "shingle, html, exact and samples describe a document store: set documents",
            );
        }
        if self.create && !Store::is_store(path) {
            Store::create(path, &self.create_options()?)?;
        }
        let opts = StoreOptions::default()
            .with_sync(self.sync)
            .with_max_delta(self.max_delta)
            .with_progress(progress);
        opts.validate()?;
        let store = match self.read_only {
            true => crate::store::Opened::Read(ReadOnlyStore::open_with(path, &opts)?),
            false => crate::store::Opened::Write(Store::open(path, &opts)?),
        };
        self.check(path, &store)?;
        Ok(store)
    }

    fn create_options(&self) -> Result<CreateOptions> {
        let recipe = match self.documents {
            false => None,
            true => {
                let shingle = self.shingle.unwrap_or(SimhashOptions::DEFAULT_SHINGLE);
                let html = self.html.unwrap_or(false);
                let sample = || self.sample.iter().map(String::as_str);
                let shape = simdex::dedup::SketchShape::for_store(self.exact.is_some());
                let r = match self.sample.is_empty() {
                    true => Recipe::new(shingle, html, shape, None)?,
                    false => Recipe::learn(shingle, html, shape, sample())?,
                };
                let r = r.with_exact(self.exact)?;
                Some(match self.sample.is_empty() || self.exact.is_none() {
                    true => r,
                    false => r.learn_order(sample()),
                })
            }
        };
        Ok(CreateOptions::default()
            .with_k(self.k.unwrap_or(CreateOptions::default().k))
            .with_expected_keys(self.expected_keys)
            .with_recipe(recipe))
    }

    /// An existing store opened with options for a new one must have what they name.
    fn check(&self, path: &Path, store: &crate::store::Opened) -> Result<()> {
        let shown = path.display();
        match store.recipe() {
            Some(r) if self.exact.is_some() && r.exact() != self.exact => {
                return invalid(format!(
                    "{shown} already exists with exact = {:?}, not {:?}: a store's recipe is \
                     fixed when it is created",
                    r.exact(),
                    self.exact
                ));
            }
            Some(r) => r.check_request(self.shingle, self.html)?,
            None if self.documents => {
                return invalid(format!(
                    "{shown} is a store of raw fingerprints, not a document store"
                ));
            }
            None => {}
        }
        let mut req = ShapeRequest::default();
        req.k = self.k;
        if let Some((what, given, has)) = store.stats().shape_difference(&req) {
            return invalid(format!(
                "{shown} already exists with {what} = {has}, not {given}: leave {what} unset \
                 to open it as it is"
            ));
        }
        Ok(())
    }
}
