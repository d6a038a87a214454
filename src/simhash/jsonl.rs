//! Documents as JSON Lines: the one rule every reader of simdex applies (`simdex hash|dedup
//! --jsonl`, the Python package, the Spark job), specified in format-spec/simhash.md, "JSON Lines
//! input". A line is a document when it is a JSON object whose `"id"` is a string or an integer
//! of at most 64 bits (kept as its decimal text) and whose `"text"` is a string; anything else
//! is a bad line with the reason given here, which every reader reports in the same words.

use serde_json::Value;

/// One line's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Line {
    /// Only whitespace: not a document and not an error.
    Blank,
    /// A document: its id (a string, or an integer's decimal text) and its text.
    Doc {
        /// The id.
        id: String,
        /// The text.
        text: String,
    },
    /// Not a document, and why (the same words in every reader).
    Bad(String),
}

impl Line {
    /// Apply the rule to one line (without its line terminator; a trailing `\r` is whitespace).
    pub fn parse(line: &str) -> Line {
        if line.trim().is_empty() {
            return Line::Blank;
        }
        match parse(line) {
            Ok((id, text)) => Line::Doc { id, text },
            Err(why) => Line::Bad(why),
        }
    }

    /// [`Line::parse`] of raw bytes: bytes that are not UTF-8 make a bad line naming the column.
    pub fn parse_bytes(line: &[u8]) -> Line {
        match std::str::from_utf8(line) {
            Ok(l) => Line::parse(l),
            Err(e) => Line::Bad(format!(
                "not UTF-8 (invalid byte at column {})",
                e.valid_up_to() + 1
            )),
        }
    }

    /// A name for a bad line where no line number travels with it (the Spark job's `bad` rows):
    /// its `"id"` as JSON text (so a tab or newline in it stays visible and the row one line),
    /// else the line's first 80 characters, escaped the same way.
    pub fn label(line: &str) -> String {
        if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(line)
            && let Some(id) = o.get("id")
        {
            return id.to_string();
        }
        let head: String = line.chars().take(80).collect();
        let more = if head.len() < line.len() { "…" } else { "" };
        format!("line {}{more}", Value::String(head))
    }
}

/// Apply the rule to one line (without its line terminator; a trailing `\r` is whitespace).
pub fn parse_line(line: &str) -> Line {
    if line.trim().is_empty() {
        return Line::Blank;
    }
    match parse(line) {
        Ok((id, text)) => Line::Doc { id, text },
        Err(why) => Line::Bad(why),
    }
}

/// [`parse_line`] of raw bytes: bytes that are not UTF-8 make a bad line naming the column.
pub fn parse_bytes(line: &[u8]) -> Line {
    match std::str::from_utf8(line) {
        Ok(l) => parse_line(l),
        Err(e) => Line::Bad(format!(
            "not UTF-8 (invalid byte at column {})",
            e.valid_up_to() + 1
        )),
    }
}

/// A name for a bad line where no line number travels with it (the Spark job's `bad` rows):
/// its `"id"` as JSON text (so a tab or newline in it stays visible and the row one line),
/// else the line's first 80 characters, escaped the same way.
pub fn bad_line_label(line: &str) -> String {
    if let Ok(Value::Object(o)) = serde_json::from_str::<Value>(line)
        && let Some(id) = o.get("id")
    {
        return id.to_string();
    }
    let head: String = line.chars().take(80).collect();
    let more = if head.len() < line.len() { "…" } else { "" };
    format!("line {}{more}", Value::String(head))
}

fn parse(line: &str) -> Result<(String, String), String> {
    let v: Value = serde_json::from_str(line).map_err(|e| format!("not JSON: {e}"))?;
    let Value::Object(o) = v else {
        return Err("not a JSON object".into());
    };
    let id = match o.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        Some(Value::Number(n)) => {
            return Err(format!(
                "\"id\" {n} is not an integer of at most 64 bits (give it as a string)"
            ));
        }
        Some(_) => return Err("\"id\" is neither a string nor a number".into()),
        None => return Err("no \"id\" field".into()),
    };
    let text = match o.get("text") {
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("\"text\" is not a string".into()),
        None => return Err("no \"text\" field".into()),
    };
    if id.contains(['\t', '\n']) {
        return Err("\"id\" contains a tab or newline".into());
    }
    if id.is_empty() {
        return Err("\"id\" is empty".into());
    }
    let max = crate::store::MAX_KEY_BYTES;
    if id.len() > max {
        return Err(format!("\"id\" is {} bytes (at most {max})", id.len()));
    }
    Ok((id, text))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bad(l: &str) -> String {
        match Line::parse(l) {
            Line::Bad(w) => w,
            other => panic!("{l:?} gave {other:?}"),
        }
    }

    #[test]
    fn the_rule() {
        let doc = |id: &str, text: &str| Line::Doc {
            id: id.into(),
            text: text.into(),
        };
        assert_eq!(Line::parse(r#"{"id": 5, "text": "a b"}"#), doc("5", "a b"));
        assert_eq!(Line::parse(r#"{"id": -5, "text": ""}"#), doc("-5", ""));
        assert_eq!(
            Line::parse(r#"{"id": 18446744073709551615, "text": "x"}"#),
            doc("18446744073709551615", "x")
        );
        assert_eq!(Line::parse(" \t\r"), Line::Blank);
        assert!(bad(r#"{"id": 5.5, "text": "x"}"#).contains("not an integer"));
        assert!(bad(r#"{"id": 18446744073709551616, "text": "x"}"#).contains("not an integer"));
        assert!(bad(r#"{"id": true, "text": "x"}"#).contains("neither"));
        assert!(bad(r#"{"id": {"a": 1}, "text": "x"}"#).contains("neither"));
        assert!(bad(r#"{"id": null, "text": "x"}"#).contains("neither"));
        assert_eq!(bad(r#"{"id": "a", "text": 5}"#), "\"text\" is not a string");
        assert_eq!(
            bad(r#"{"id": "a", "text": ["x"]}"#),
            "\"text\" is not a string"
        );
        assert_eq!(
            bad(r#"{"id": "a", "text": null}"#),
            "\"text\" is not a string"
        );
        assert_eq!(bad(r#"{"id": "", "text": "x"}"#), "\"id\" is empty");
        let long = format!(r#"{{"id": "{}", "text": "x"}}"#, "u".repeat(2049));
        assert_eq!(bad(&long), "\"id\" is 2049 bytes (at most 2048)");
        assert_eq!(bad(r#"{"text": "x"}"#), "no \"id\" field");
        assert_eq!(bad(r#"{"id": "x"}"#), "no \"text\" field");
        assert_eq!(bad(r#"[{"id": "x", "text": "y"}]"#), "not a JSON object");
        assert_eq!(bad("5"), "not a JSON object");
        assert!(bad(r#"{"id": "a", "text": NaN}"#).starts_with("not JSON"));
        assert!(bad("{not json").starts_with("not JSON"));
        assert_eq!(
            bad("{\"id\": \"a\\tb\", \"text\": \"x\"}"),
            "\"id\" contains a tab or newline"
        );
        assert!(
            matches!(Line::parse_bytes(b"{\"id\": \"\xff\"}"), Line::Bad(w) if w.contains("column 9"))
        );
    }
}
