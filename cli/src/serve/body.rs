//! Request bodies and answers: JSON objects, little-endian u64 arrays, and the error every
//! refusal becomes (a stable code, the HTTP status, the engine's message).

use serde_json::{Map, Value};
use simdex::DocId;

use super::http::{Request, Response};

/// A refusal: `{"error": {"code": …, "message": …}}` with its status.
#[derive(Debug)]
pub struct ApiError {
    pub status: u16,
    pub code: &'static str,
    pub message: String,
    /// Seconds for `Retry-After` (a 503).
    pub retry_after: Option<u32>,
}

impl ApiError {
    pub fn new(status: u16, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    /// 400 invalid_argument.
    pub fn invalid(message: impl Into<String>) -> ApiError {
        ApiError::new(400, "invalid_argument", message)
    }

    /// 503 overloaded, to retry after a second.
    pub fn overloaded(message: impl Into<String>) -> ApiError {
        let mut e = ApiError::new(503, "overloaded", message);
        e.retry_after = Some(1);
        e
    }

    /// The response.
    pub fn response(&self) -> Response {
        let body = serde_json::json!({"error": {"code": self.code, "message": self.message}});
        let r = Response::new(self.status, JSON, body.to_string().into_bytes());
        match self.retry_after {
            Some(s) => r.with("Retry-After", s.to_string()),
            None => r,
        }
    }
}

impl From<simdex::Error> for ApiError {
    fn from(e: simdex::Error) -> ApiError {
        use simdex::Error as E;
        let (status, code) = match &e {
            E::InvalidArgument(_) | E::Parse { .. } | E::Unsorted { .. } => {
                (400, "invalid_argument")
            }
            E::InputChanged { .. } => (409, "input_changed"),
            E::Cancelled => (504, "deadline_exceeded"),
            E::Corrupt { .. } => (500, "corrupt"),
            E::Unsupported { .. } => (500, "unsupported"),
            E::Io { .. } => (500, "io"),
            E::Locked { .. } => (409, "locked"),
            E::Poisoned(_) => (500, "poisoned"),
            E::Forked { .. } => (500, "forked"),
            _ => (500, "internal"),
        };
        ApiError::new(status, code, e.to_string())
    }
}

pub const JSON: &str = "application/json";
pub const BINARY: &str = "application/octet-stream";

/// A JSON answer.
pub fn json(v: Value) -> Response {
    Response::new(200, JSON, v.to_string().into_bytes())
}

/// Whether the client asked for binary answers.
pub fn wants_binary(req: &Request) -> bool {
    req.header("accept")
        .is_some_and(|a| a.to_ascii_lowercase().contains(BINARY))
}

/// What a body is.
pub enum Body {
    Json(Map<String, Value>),
    Binary(Vec<u64>),
}

/// The body as JSON (an object) or, where `binary` allows it, as u64 values; an empty body
/// is an empty object.
pub fn body(req: &Request, binary: bool) -> Result<Body, ApiError> {
    match binary && req.content_type() == BINARY {
        true => u64s(&req.body).map(Body::Binary),
        false => json_object(req, binary).map(Body::Json),
    }
}

/// The body as a JSON object (an empty body is an empty object).
pub fn object(req: &Request) -> Result<Map<String, Value>, ApiError> {
    json_object(req, false)
}

/// [`object`]; `binary_too` names binary bodies among the accepted ones in the error.
fn json_object(req: &Request, binary_too: bool) -> Result<Map<String, Value>, ApiError> {
    let ct = req.content_type();
    if req.body.is_empty() && (ct.is_empty() || ct == JSON) {
        return Ok(Map::new());
    }
    if ct != JSON {
        let accepted = if binary_too {
            "application/json or application/octet-stream"
        } else {
            "application/json"
        };
        return Err(ApiError::new(
            415,
            "unsupported_media_type",
            format!(
                "Content-Type {:?}: {} {} takes {accepted}",
                req.header("content-type").unwrap_or(""),
                req.method,
                req.path
            ),
        ));
    }
    match serde_json::from_slice::<Value>(&req.body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(other) => Err(ApiError::invalid(format!(
            "the body is JSON {}, not an object",
            kind(&other)
        ))),
        Err(e) => Err(ApiError::invalid(format!(
            "the body is not valid JSON: {e}"
        ))),
    }
}

/// Little-endian u64 values.
pub fn u64s(bytes: &[u8]) -> Result<Vec<u64>, ApiError> {
    if !bytes.len().is_multiple_of(8) {
        return Err(ApiError::invalid(format!(
            "a binary body of {} bytes: not a whole number of 8-byte little-endian values \
             (truncated?)",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect())
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A fingerprint: a JSON integer (0 to 2^64 − 1) or a string of 1 to 16 hex digits, with or
/// without `0x`.
pub fn fingerprint(v: &Value, what: &str) -> Result<u64, ApiError> {
    match v {
        Value::Number(n) => n.as_u64().ok_or_else(|| {
            ApiError::invalid(format!("{what} is {n}: not an integer from 0 to 2^64 - 1"))
        }),
        Value::String(s) => hex(s, what),
        other => Err(ApiError::invalid(format!(
            "{what} is {}: give an integer or a hex string",
            kind(other)
        ))),
    }
}

/// A fingerprint in hex (1 to 16 digits, optional `0x`).
pub fn hex(s: &str, what: &str) -> Result<u64, ApiError> {
    let digits = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .unwrap_or(s);
    let ok = !digits.is_empty() && digits.len() <= 16;
    match u64::from_str_radix(digits, 16) {
        Ok(v) if ok && digits.bytes().all(|b| b.is_ascii_hexdigit()) => Ok(v),
        _ => Err(ApiError::invalid(format!(
            "{what} {s:?} is not a fingerprint (1 to 16 hex digits, optional 0x)"
        ))),
    }
}

/// An array field of fingerprints (absent: an error).
pub fn fingerprints(m: &Map<String, Value>, key: &str) -> Result<Vec<u64>, ApiError> {
    array(m, key)?
        .iter()
        .enumerate()
        .map(|(i, v)| fingerprint(v, &format!("{key}[{i}]")))
        .collect()
}

/// An array field (absent or not an array: an error).
pub fn array<'a>(m: &'a Map<String, Value>, key: &str) -> Result<&'a Vec<Value>, ApiError> {
    match m.get(key) {
        Some(Value::Array(a)) => Ok(a),
        Some(other) => Err(ApiError::invalid(format!(
            "{key:?} is {}, not an array",
            kind(other)
        ))),
        None => Err(ApiError::invalid(format!("the field {key:?} is missing"))),
    }
}

/// An optional unsigned integer field no larger than `max`.
pub fn opt_uint(m: &Map<String, Value>, key: &str, max: u64) -> Result<Option<u64>, ApiError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_u64() {
            Some(v) if v <= max => Ok(Some(v)),
            _ => Err(ApiError::invalid(format!(
                "{key:?} is {n}: give an integer from 0 to {max}"
            ))),
        },
        Some(other) => Err(ApiError::invalid(format!(
            "{key:?} is {}, not an integer",
            kind(other)
        ))),
    }
}

/// An optional number field.
pub fn opt_f64(m: &Map<String, Value>, key: &str) -> Result<Option<f64>, ApiError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => Ok(n.as_f64()),
        Some(other) => Err(ApiError::invalid(format!(
            "{key:?} is {}, not a number",
            kind(other)
        ))),
    }
}

/// Refuse fields this operation does not know (a misspelt option is never ignored).
pub fn only(m: &Map<String, Value>, known: &[&str]) -> Result<(), ApiError> {
    match m.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(ApiError::invalid(format!(
            "unknown field {k:?} (this operation takes {})",
            known.join(", ")
        ))),
        None => Ok(()),
    }
}

/// Document ids: integers, or strings under the one id rule (a canonical decimal string is
/// the numeric id).
pub fn doc_ids(m: &Map<String, Value>, key: &str) -> Result<Vec<DocId>, ApiError> {
    array(m, key)?
        .iter()
        .enumerate()
        .map(|(i, v)| match v {
            Value::Number(n) => n.as_u64().map(DocId::Num).ok_or_else(|| {
                ApiError::invalid(format!(
                    "{key}[{i}] is {n}: not an integer from 0 to 2^64 - 1"
                ))
            }),
            Value::String(s) => Ok(DocId::parse(s)),
            other => Err(ApiError::invalid(format!(
                "{key}[{i}] is {}: an id is an integer or a string",
                kind(other)
            ))),
        })
        .collect()
}

/// A document id as JSON: a number, or the string it was given as.
pub fn doc_id_json(id: &DocId) -> Value {
    match id {
        DocId::Num(n) => Value::from(*n),
        DocId::Key(k) => Value::from(&**k),
    }
}

/// A fingerprint as JSON: 16 hex digits.
pub fn fp_json(fp: u64) -> Value {
    Value::String(format!("{fp:016x}"))
}
