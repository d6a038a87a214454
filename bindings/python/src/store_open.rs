//! Opening (and creating) a `simdex.Store`: the constructor's options checked against each
//! other, a new store's recipe learned, and an existing store's shape and recipe checked
//! against what the call names (an option for a new store is never ignored silently).

use std::path::Path;

use pyo3::prelude::*;
use simdex::{CreateOptions, Recipe, ShapeRequest, Store, StoreOptions};

use crate::errors::{invalid, to_py};
use crate::handle::Handle;
use crate::index::design_choice;
use crate::runtime::detached;
use crate::texts::Texts;

/// The constructor's options (see the stubs).
pub(crate) struct Request<'a> {
    pub create: bool,
    pub k: Option<u32>,
    pub design: Option<&'a str>,
    pub codec: Option<&'a str>,
    pub block_size: Option<u32>,
    pub expected: u64,
    pub sync: &'a str,
    pub max_delta: u64,
    pub mem_bytes: u64,
    pub read_only: bool,
    pub populate: bool,
    pub documents: bool,
    pub html: Option<bool>,
    pub shingle: Option<usize>,
    /// Texts to learn a new document store's weights and shingle order from.
    pub sample: Option<Texts>,
    pub exact: Option<f64>,
}

/// Open the store at `path` as `r` asks, creating it first if asked and absent.
pub(crate) fn open(py: Python<'_>, path: &Path, r: Request<'_>) -> PyResult<Handle> {
    let Request {
        create,
        k,
        design,
        codec,
        block_size,
        expected,
        sync,
        max_delta,
        mem_bytes,
        read_only,
        populate,
        documents,
        html,
        shingle,
        sample,
        exact,
    } = r;
    if create && read_only {
        return Err(invalid("create=True and read_only=True exclude each other"));
    }
    if !documents && (html.is_some() || shingle.is_some() || sample.is_some() || exact.is_some()) {
        return Err(invalid(
            "html, shingle, learn_from and exact describe a document store: pass \
             documents=True",
        ));
    }
    let opts = StoreOptions::default()
        .with_sync(sync.parse().map_err(to_py)?)
        .with_max_delta(max_delta)
        .with_mem_bytes(mem_bytes)
        .with_populate(populate);
    opts.validate().map_err(to_py)?;
    let codec = codec.map(str::parse).transpose().map_err(to_py)?;
    let copts = CreateOptions::default()
        .with_k(k.unwrap_or(3))
        .with_design(design_choice(design.unwrap_or("auto")))
        .with_codec(codec.unwrap_or(simdex::raw::Codec::HDelta))
        .with_block_size(block_size)
        .with_expected_keys(expected);
    let mut req = ShapeRequest::default();
    req.k = k;
    req.design = design.map(str::to_string);
    req.codec = codec;
    req.block_size = block_size.map(Some);
    let p = path.to_path_buf();
    detached(py, None, move || {
        let created = create && !Store::is_store(&p);
        if created {
            let recipe = match (documents, &sample) {
                (false, _) => None,
                (true, None) => Some(Recipe::new(
                    shingle.unwrap_or(simdex::SimhashOptions::DEFAULT_SHINGLE),
                    html.unwrap_or(false),
                    Default::default(),
                    None,
                )?),
                (true, Some(t)) => Some(Recipe::learn(
                    shingle.unwrap_or(simdex::SimhashOptions::DEFAULT_SHINGLE),
                    html.unwrap_or(false),
                    Default::default(),
                    (0..t.len()).map(|i| t.get(i)),
                )?),
            };
            let recipe = recipe
                .map(|r| r.with_exact(exact))
                .transpose()?
                .map(|r| match &sample {
                    Some(t) => r.learn_order((0..t.len()).map(|i| t.get(i))),
                    None => r,
                });
            Store::create(&p, &copts.with_recipe(recipe))?;
        }
        let store = if read_only {
            Handle::Read(simdex::ReadOnlyStore::open_with(&p, &opts)?)
        } else {
            Handle::Write(Store::open(&p, &opts)?)
        };
        match store.recipe() {
            Some(r) if exact.is_some() && r.exact() != exact => {
                return Err(simdex::Error::InvalidArgument(format!(
                    "{} already exists with exact={:?}, not exact={:?}: a store's recipe is \
                     fixed when it is created",
                    p.display(),
                    r.exact(),
                    exact
                )));
            }
            Some(r) => r.check_request(shingle, html)?,
            None if documents => {
                return Err(simdex::Error::InvalidArgument(format!(
                    "{} is a store of raw fingerprints, not a document store",
                    p.display()
                )));
            }
            None => {}
        }
        // Options for a new store must not be ignored silently when it already exists.
        if let Some((what, given, has)) = store.stats().shape_difference(&req) {
            let what = what.replace('-', "_");
            return Err(simdex::Error::InvalidArgument(format!(
                "{} already exists with {what}={has}, not {what}={given}: leave {what} out \
                 to open it as it is, or change it with `simdex rebuild`",
                p.display()
            )));
        }
        Ok(store)
    })
}
