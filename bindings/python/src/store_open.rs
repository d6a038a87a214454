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

/// Open the store at `path` as `o` asks, creating it first if asked and absent.
pub(crate) fn open(py: Python<'_>, path: &Path, o: Request<'_>) -> PyResult<Handle> {
    if o.create && o.read_only {
        return Err(invalid("create=True and read_only=True exclude each other"));
    }
    let names_documents =
        o.html.is_some() || o.shingle.is_some() || o.sample.is_some() || o.exact.is_some();
    if !o.documents && names_documents {
        return Err(invalid(
            "html, shingle, learn_from and exact describe a document store: pass \
             documents=True",
        ));
    }
    let opts = StoreOptions::default()
        .with_sync(o.sync.parse().map_err(to_py)?)
        .with_max_delta(o.max_delta)
        .with_mem_bytes(o.mem_bytes)
        .with_populate(o.populate);
    opts.validate().map_err(to_py)?;
    let codec = o.codec.map(str::parse).transpose().map_err(to_py)?;
    let copts = CreateOptions::default()
        .with_k(o.k.unwrap_or(3))
        .with_design(design_choice(o.design.unwrap_or("auto")))
        .with_codec(codec.unwrap_or(simdex::raw::Codec::HDelta))
        .with_block_size(o.block_size)
        .with_expected_keys(o.expected);
    let mut shape = ShapeRequest::default();
    shape.k = o.k;
    shape.design = o.design.map(str::to_string);
    shape.codec = codec;
    shape.block_size = o.block_size.map(Some);
    let p = path.to_path_buf();
    let (shingle, html, exact) = (o.shingle, o.html, o.exact);
    let (create, documents, read_only, sample) = (o.create, o.documents, o.read_only, o.sample);
    detached(py, None, move || {
        if create && !Store::is_store(&p) {
            let shingle = shingle.unwrap_or(simdex::SimhashOptions::DEFAULT_SHINGLE);
            let html = html.unwrap_or(false);
            let shape = simdex::dedup::SketchShape::for_store(exact.is_some());
            let recipe = match (documents, &sample) {
                (false, _) => None,
                (true, None) => Some(Recipe::new(shingle, html, shape, None)?),
                (true, Some(t)) => Some(Recipe::learn(
                    shingle,
                    html,
                    shape,
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
        if let Some((what, given, has)) = store.stats().shape_difference(&shape) {
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
