//! The HTTP API (`format-spec/openapi.json`): each path's operation, read from its request
//! and answered from the store. Admission (auth, limits, slots) happens before, in `serve`.

use serde_json::{Value, json};
use simdex::{DocId, Document, Expiry, IngestOptions, ProgressHandle, Verdict};

use super::backend::Backend;
use super::body::{self, ApiError, BINARY, Body, json};
use super::http::{Request, Response};
use super::metrics::Op;

/// The operation at `path`, and the methods it takes.
pub fn route(path: &str) -> Option<(Op, &'static [&'static str])> {
    const GET: &[&str] = &["GET"];
    const POST: &[&str] = &["POST"];
    const BOTH: &[&str] = &["GET", "POST"];
    Some(match path {
        "/v1/health" => (Op::Health, GET),
        "/metrics" => (Op::Metrics, GET),
        "/v1/stats" => (Op::Stats, GET),
        "/v1/near" => (Op::Near, BOTH),
        "/v1/near-many" => (Op::NearMany, POST),
        "/v1/ids-of" => (Op::IdsOf, GET),
        "/v1/insert" => (Op::Insert, POST),
        "/v1/delete" => (Op::Delete, POST),
        "/v1/ingest" => (Op::Ingest, POST),
        "/v1/check" => (Op::Check, POST),
        "/v1/expire" => (Op::Expire, POST),
        "/v1/flush" => (Op::Flush, POST),
        "/v1/compact" => (Op::Compact, POST),
        _ => return None,
    })
}

/// Answer `req` (admitted) for `op`; `cancel` tells a long query that its deadline passed.
pub fn answer(
    op: Op,
    backend: &Backend,
    req: &Request,
    cancel: &ProgressHandle,
) -> Result<Response, ApiError> {
    match op {
        Op::Stats => stats(backend),
        Op::Near => near(backend, req),
        Op::NearMany => near_many(backend, req, cancel),
        Op::IdsOf => ids_of(backend, req),
        Op::Insert => insert(backend, req),
        Op::Delete => delete(backend, req),
        Op::Ingest => documents(backend, req, true),
        Op::Check => documents(backend, req, false),
        Op::Expire => expire(backend, req),
        Op::Flush => {
            no_body(req)?;
            writer(backend)?.flush()?;
            Ok(json(json!({"flushed": true})))
        }
        Op::Compact => {
            no_body(req)?;
            let done = writer(backend)?.compact()?;
            Ok(json(json!({
                "compacted": done.is_some(),
                "generation": backend.stats().generation,
            })))
        }
        Op::Health | Op::Metrics | Op::Other => Err(ApiError::new(404, "not_found", "no route")),
    }
}

fn writer(b: &Backend) -> Result<&simdex::Store, ApiError> {
    b.writer().ok_or_else(|| {
        ApiError::new(
            403,
            "read_only",
            "this server follows a store another process writes (--read-only): it answers \
             queries only",
        )
    })
}

fn no_body(req: &Request) -> Result<(), ApiError> {
    body::only(&body::object(req)?, &[])
}

/// `k` as asked (default: the store's), refused above the store's.
fn check_k(b: &Backend, k: Option<u64>) -> Result<u32, ApiError> {
    let store_k = b.k();
    match k {
        None => Ok(store_k),
        Some(k) if k <= u64::from(store_k) => Ok(k as u32),
        Some(k) => Err(ApiError::invalid(format!(
            "k = {k} is above the store's k = {store_k} (its tables answer up to that distance)"
        ))),
    }
}

/// The `k` query parameter.
fn k_param(req: &Request) -> Result<Option<u64>, ApiError> {
    req.param("k")
        .map(|s| {
            s.parse::<u64>()
                .map_err(|_| ApiError::invalid(format!("k = {s:?} is not a whole number")))
        })
        .transpose()
}

fn stats(b: &Backend) -> Result<Response, ApiError> {
    let s = b.stats();
    let recipe = b.recipe().map(|r| {
        json!({
            "shingle": r.shingle(),
            "html": r.html(),
            "weights": if r.weights().is_some() { "idf" } else { "count" },
            "sketch_bins": r.sketch_shape().bins(),
            "sketch_bits": r.sketch_shape().bits(),
            "exact": r.exact(),
        })
    });
    Ok(json(json!({
        "generation": s.generation,
        "design": s.design,
        "k": s.k,
        "fingerprints": s.fingerprints,
        "pairs": s.pairs,
        "delta_pairs": s.delta_pairs,
        "delta_deletes": s.delta_deletes,
        "table_bytes": s.table_bytes,
        "id_map_bytes": s.id_map_bytes,
        "log_bytes": s.log_bytes,
        "documents": s.documents,
        "doc_map_bytes": s.doc_map_bytes,
        "sets_bytes": s.sets_bytes,
        "sets_live_bytes": s.sets_live_bytes,
        "max_seq": s.max_seq,
        "read_only": b.writer().is_none(),
        "recipe": recipe,
    })))
}

fn near(b: &Backend, req: &Request) -> Result<Response, ApiError> {
    let (fp, k) = match req.method.as_str() {
        "GET" => {
            let fp = req
                .param("fingerprint")
                .ok_or_else(|| ApiError::invalid("the query parameter fingerprint is missing"))?;
            (body::hex(&fp, "fingerprint")?, k_param(req)?)
        }
        _ => {
            let m = body::object(req)?;
            body::only(&m, &["fingerprint", "k"])?;
            let fp = m
                .get("fingerprint")
                .ok_or_else(|| ApiError::invalid("the field \"fingerprint\" is missing"))?;
            (
                body::fingerprint(fp, "fingerprint")?,
                body::opt_uint(&m, "k", 64)?,
            )
        }
    };
    let k = check_k(b, k)?;
    let mut rows: Vec<(u32, u64, u64)> = b
        .near(fp, k)?
        .into_iter()
        .flat_map(|m| {
            m.ids
                .into_iter()
                .map(move |id| (m.distance, m.fingerprint, id))
        })
        .collect();
    rows.sort_unstable();
    let fps: Vec<u64> = rows.iter().map(|r| r.1).collect();
    let ids: Vec<u64> = rows.iter().map(|r| r.2).collect();
    let dist: Vec<u32> = rows.iter().map(|r| r.0).collect();
    Ok(rows_response(req, None, &fps, &ids, &dist))
}

fn near_many(b: &Backend, req: &Request, cancel: &ProgressHandle) -> Result<Response, ApiError> {
    let (fps, k) = match body::body(req, true)? {
        Body::Binary(v) => (v, k_param(req)?),
        Body::Json(m) => {
            body::only(&m, &["fingerprints", "k"])?;
            (
                body::fingerprints(&m, "fingerprints")?,
                body::opt_uint(&m, "k", 64)?,
            )
        }
    };
    let k = check_k(b, k)?;
    let found = b.near_many(&fps, k, cancel)?;
    let rows = &found.rows;
    let mut query = Vec::with_capacity(rows.len());
    for (q, w) in found.offsets.windows(2).enumerate() {
        query.extend(std::iter::repeat_n(q as u64, w[1] - w[0]));
    }
    let fps: Vec<u64> = rows.iter().map(|r| r.fingerprint).collect();
    let ids: Vec<u64> = rows.iter().map(|r| r.id).collect();
    let dist: Vec<u32> = rows.iter().map(|r| r.distance).collect();
    Ok(rows_response(req, Some(&query), &fps, &ids, &dist))
}

/// Query rows, as the client asked: binary columns (`Accept: application/octet-stream`: the
/// row count as u64, then the query indexes if there are any, the fingerprints and the ids as
/// u64 each, then the distances as u32; little-endian), else JSON columns.
fn rows_response(
    req: &Request,
    query: Option<&[u64]>,
    fps: &[u64],
    ids: &[u64],
    dist: &[u32],
) -> Response {
    if body::wants_binary(req) {
        let mut out = Vec::with_capacity(8 + fps.len() * 28);
        out.extend_from_slice(&(fps.len() as u64).to_le_bytes());
        for column in query.into_iter().chain([fps, ids]) {
            column
                .iter()
                .for_each(|v| out.extend_from_slice(&v.to_le_bytes()));
        }
        dist.iter()
            .for_each(|d| out.extend_from_slice(&d.to_le_bytes()));
        return Response::new(200, BINARY, out);
    }
    let mut v = json!({
        "fingerprint": fps.iter().map(|&f| body::fp_json(f)).collect::<Vec<_>>(),
        "distance": dist,
        "id": ids,
    });
    if let Some(q) = query {
        v["query_index"] = json!(q);
    }
    json(v)
}

fn ids_of(b: &Backend, req: &Request) -> Result<Response, ApiError> {
    let fp = req
        .param("fingerprint")
        .ok_or_else(|| ApiError::invalid("the query parameter fingerprint is missing"))?;
    let ids = b.ids_of(body::hex(&fp, "fingerprint")?)?;
    Ok(json(json!({ "ids": ids })))
}

fn insert(b: &Backend, req: &Request) -> Result<Response, ApiError> {
    let (fps, ids) = match body::body(req, true)? {
        Body::Binary(v) => {
            if v.len() % 2 != 0 {
                return Err(ApiError::invalid(format!(
                    "a binary insert is n fingerprints then n ids: {} values is odd",
                    v.len()
                )));
            }
            let (f, i) = v.split_at(v.len() / 2);
            (f.to_vec(), i.to_vec())
        }
        Body::Json(m) => {
            body::only(&m, &["fingerprints", "ids"])?;
            let fps = body::fingerprints(&m, "fingerprints")?;
            let ids = body::array(&m, "ids")?
                .iter()
                .enumerate()
                .map(|(i, v)| {
                    v.as_u64().ok_or_else(|| {
                        ApiError::invalid(format!(
                            "ids[{i}] is {v}: not an integer from 0 to 2^64 - 1"
                        ))
                    })
                })
                .collect::<Result<Vec<u64>, _>>()?;
            (fps, ids)
        }
    };
    if fps.len() != ids.len() {
        return Err(ApiError::invalid(format!(
            "{} fingerprints and {} ids: one id per fingerprint",
            fps.len(),
            ids.len()
        )));
    }
    let pairs: Vec<(u64, u64)> = fps.into_iter().zip(ids).collect();
    writer(b)?.insert_many(&pairs)?;
    Ok(json(json!({ "inserted": pairs.len() })))
}

fn delete(b: &Backend, req: &Request) -> Result<Response, ApiError> {
    let s = writer(b)?;
    let ids: Vec<DocId> = match body::body(req, true)? {
        Body::Binary(v) => v.into_iter().map(DocId::Num).collect(),
        Body::Json(m) => {
            body::only(&m, &["ids"])?;
            body::doc_ids(&m, "ids")?
        }
    };
    if s.recipe().is_some() {
        let deleted = s.delete_documents(&ids)?;
        return Ok(json(json!({ "ids": ids.len(), "documents": deleted })));
    }
    let nums = ids
        .iter()
        .enumerate()
        .map(|(i, id)| match id {
            DocId::Num(n) => Ok(*n),
            DocId::Key(k) => Err(ApiError::invalid(format!(
                "ids[{i}] is the string {k:?}: a store of raw fingerprints has numeric ids only"
            ))),
        })
        .collect::<Result<Vec<u64>, _>>()?;
    s.delete_many(&nums)?;
    Ok(json(json!({ "ids": nums.len(), "documents": null })))
}

fn documents(b: &Backend, req: &Request, store: bool) -> Result<Response, ApiError> {
    if req.content_type() != body::JSON {
        return Err(ApiError::new(
            415,
            "unsupported_media_type",
            format!("{} takes application/json", req.path),
        ));
    }
    let m = super::documents_body::parse(&req.body)?;
    let opts = IngestOptions::default()
        .with_k(m.k.map(|k| k as u32))
        .with_verify(m.verify)
        .with_store_only(m.store_only);
    let docs: Vec<Document<'_>> = m
        .ids
        .iter()
        .zip(&m.texts)
        .map(|(id, text)| Document { id, text })
        .collect();
    let verdicts = match store {
        true => writer(b)?.ingest(&docs, &opts)?,
        false => b.check(&docs, &opts)?,
    };
    let n = verdicts.len();
    let (mut dup, mut matched, mut sim, mut dist, mut stored, mut again) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for v in verdicts {
        match v {
            Verdict::Duplicate {
                id,
                similarity,
                distance,
            } => {
                dup.push(true);
                matched.push(body::doc_id_json(&id));
                sim.push(Value::from(similarity));
                dist.push(i64::from(distance));
                stored.push(false);
                again.push(false);
            }
            other => {
                dup.push(false);
                matched.push(Value::Null);
                sim.push(Value::Null);
                dist.push(-1);
                stored.push(store && other == Verdict::New);
                again.push(other == Verdict::AlreadyStored);
            }
        }
    }
    Ok(json(json!({
        "duplicate": dup,
        "matched": matched,
        "similarity": sim,
        "distance": dist,
        "stored": stored,
        "already_stored": again,
    })))
}

fn expire(b: &Backend, req: &Request) -> Result<Response, ApiError> {
    let s = writer(b)?;
    let m = body::object(req)?;
    body::only(&m, &["before", "before_seq"])?;
    let before = body::opt_f64(&m, "before")?;
    let seq = body::opt_uint(&m, "before_seq", u64::MAX)?;
    let expiry = match (before, seq) {
        (Some(t), None) if t.is_finite() && t >= 0.0 => Expiry::StoredBefore((t * 1000.0) as u64),
        (None, Some(q)) => Expiry::SeqBelow(q),
        (Some(t), None) => {
            return Err(ApiError::invalid(format!(
                "before = {t}: give Unix seconds, 0 or more"
            )));
        }
        _ => {
            return Err(ApiError::invalid(
                "give one of \"before\" (Unix seconds) or \"before_seq\"",
            ));
        }
    };
    Ok(json(json!({ "deleted": s.expire(expiry)? })))
}
