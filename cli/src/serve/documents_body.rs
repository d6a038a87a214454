//! The body of `/v1/ingest` and `/v1/check`, read straight into ids and texts: a text without
//! escapes is borrowed from the body, not copied into a JSON tree first (a call of 4,096 pages
//! is megabytes of text, and the tree was a copy of each and an allocation per value).

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use simdex::DocId;

use super::body::ApiError;

/// What the body asks.
pub struct DocumentsBody<'a> {
    pub ids: Vec<DocId>,
    pub texts: Vec<Cow<'a, str>>,
    pub verify: Option<f64>,
    pub k: Option<u64>,
    pub store_only: bool,
}

/// Read `bytes` (a JSON object with the fields above: ids and texts required, nothing else).
pub fn parse(bytes: &[u8]) -> Result<DocumentsBody<'_>, ApiError> {
    let mut d = serde_json::Deserializer::from_slice(bytes);
    let body = d
        .deserialize_map(BodyVisitor)
        .and_then(|b| d.end().map(|_| b))
        .map_err(|e| ApiError::invalid(format!("the body: {e}")))?;
    if body.ids.len() != body.texts.len() {
        return Err(ApiError::invalid(format!(
            "{} ids and {} texts: one id per text",
            body.ids.len(),
            body.texts.len()
        )));
    }
    Ok(body)
}

const FIELDS: &str = "ids, texts, verify, k, store_only";

struct BodyVisitor;

impl<'de> Visitor<'de> for BodyVisitor {
    type Value = DocumentsBody<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object with {FIELDS}")
    }

    fn visit_map<M: MapAccess<'de>>(self, mut m: M) -> Result<Self::Value, M::Error> {
        let (mut ids, mut texts) = (None, None);
        let mut body = DocumentsBody {
            ids: Vec::new(),
            texts: Vec::new(),
            verify: None,
            k: None,
            store_only: false,
        };
        while let Some(key) = m.next_key::<Cow<'de, str>>()? {
            match &*key {
                "ids" => ids = Some(m.next_value::<Seq<Id>>()?.0),
                "texts" => texts = Some(m.next_value::<Seq<Text<'de>>>()?.0),
                "verify" => body.verify = m.next_value()?,
                "k" => {
                    let k: Option<u64> = m.next_value()?;
                    if k.is_some_and(|k| k > 64) {
                        return Err(de::Error::custom(format!(
                            "\"k\" is {}: give an integer from 0 to 64",
                            k.unwrap_or(0)
                        )));
                    }
                    body.k = k;
                }
                "store_only" => body.store_only = m.next_value::<Option<bool>>()?.unwrap_or(false),
                other => {
                    return Err(de::Error::custom(format!(
                        "unknown field {other:?} (this operation takes {FIELDS})"
                    )));
                }
            }
        }
        body.ids = ids
            .ok_or_else(|| de::Error::custom("the field \"ids\" is missing"))?
            .into_iter()
            .map(|i| i.0)
            .collect();
        body.texts = texts
            .ok_or_else(|| de::Error::custom("the field \"texts\" is missing"))?
            .into_iter()
            .map(|t| t.0)
            .collect();
        Ok(body)
    }
}

/// An array of `T`.
struct Seq<T>(Vec<T>);

impl<'de, T: de::Deserialize<'de>> de::Deserialize<'de> for Seq<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: de::Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Seq<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<S: SeqAccess<'de>>(self, mut s: S) -> Result<Seq<T>, S::Error> {
                let mut v = Vec::with_capacity(s.size_hint().unwrap_or(0).min(1 << 16));
                while let Some(x) = s.next_element()? {
                    v.push(x);
                }
                Ok(Seq(v))
            }
        }
        d.deserialize_seq(V(std::marker::PhantomData))
    }
}

/// A text, borrowed where it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a text (a string)")
            }
            fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_string())))
            }
            fn visit_string<E>(self, s: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A document id: an integer, or a string under the one id rule.
struct Id(DocId);

impl<'de> de::Deserialize<'de> for Id {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Id;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an id (an integer from 0 to 2^64 - 1, or a string)")
            }
            fn visit_u64<E>(self, n: u64) -> Result<Id, E> {
                Ok(Id(DocId::Num(n)))
            }
            fn visit_str<E>(self, s: &str) -> Result<Id, E> {
                Ok(Id(DocId::parse(s)))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_borrowed_and_escaped_texts_and_refuses_the_rest() {
        let b = br#"{"texts": ["plain", "esc\"aped"], "ids": [7, "7", "u", "07"], "verify": 0.9}"#;
        assert!(parse(b).is_err(), "4 ids and 2 texts");
        let b =
            br#"{"texts": ["plain", "esc\"aped"], "ids": [7, "u"], "k": 3, "store_only": true}"#;
        let d = parse(b).unwrap();
        assert!(matches!(d.texts[0], Cow::Borrowed("plain")));
        assert_eq!(d.texts[1], "esc\"aped");
        assert_eq!(d.ids, vec![DocId::Num(7), DocId::parse("u")]);
        assert_eq!((d.k, d.store_only, d.verify), (Some(3), true, None));
        for bad in [
            &br#"{"ids": [1], "texts": [2]}"#[..],
            br#"{"ids": [-1], "texts": ["a"]}"#,
            br#"{"ids": [1], "texts": ["a"], "kk": 1}"#,
            br#"{"ids": [1], "texts": ["a"], "k": 65}"#,
            br#"{"ids": [1]}"#,
            br#"{"ids": [1], "texts": ["a"]} trailing"#,
            br#"[1]"#,
        ] {
            let e = parse(bad).err().expect("refused");
            assert_eq!(e.status, 400, "{}", String::from_utf8_lossy(bad));
        }
    }
}
