//! An HTML page's visible text, as a crawler's simhash wants it: parsed by html5ever (through
//! `scraper`), the spec-compliant parser browsers use, so malformed markup, entities and
//! character references come out as a browser would show them.
//!
//! Dropped with everything inside them: `head` (title, meta), `script`, `style`, `noscript`,
//! `template`, `nav`, `svg`, `iframe`, `object`, and any element that is hidden: the `hidden`
//! attribute, `aria-hidden="true"`, or an inline style with `display: none` or
//! `visibility: hidden`. Block-level elements and `<br>` separate words; inline ones do not
//! (`<b>wo</b>rd` is one word).

use ego_tree::iter::Edge;
use scraper::{Html, Node};

const DROPPED: &[&str] = &[
    "head", "script", "style", "noscript", "template", "nav", "svg", "iframe", "object", "embed",
    "canvas", "select", "button",
];

const BLOCK: &[&str] = &[
    "address",
    "article",
    "aside",
    "blockquote",
    "br",
    "dd",
    "details",
    "dialog",
    "div",
    "dl",
    "dt",
    "fieldset",
    "figcaption",
    "figure",
    "footer",
    "form",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "main",
    "ol",
    "p",
    "pre",
    "section",
    "summary",
    "table",
    "tbody",
    "td",
    "tfoot",
    "th",
    "thead",
    "tr",
    "ul",
    "body",
    "html",
    "option",
    "caption",
    "label",
];

fn hidden(el: &scraper::node::Element) -> bool {
    if DROPPED.contains(&el.name()) || el.attr("hidden").is_some() {
        return true;
    }
    if el
        .attr("aria-hidden")
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    {
        return true;
    }
    el.attr("style").is_some_and(|s| {
        let s: String = s
            .chars()
            .filter(|c| !c.is_whitespace())
            .collect::<String>()
            .to_ascii_lowercase();
        s.contains("display:none") || s.contains("visibility:hidden")
    })
}

/// The visible text of an HTML document (or fragment), words separated as a browser would.
pub fn visible_text(html: &str) -> String {
    let doc = Html::parse_document(html);
    let mut out = String::with_capacity(html.len() / 2);
    // Depth inside a dropped element; text there is skipped.
    let mut skip = 0usize;
    for edge in doc.tree.root().traverse() {
        match edge {
            Edge::Open(node) => match node.value() {
                Node::Element(el) => {
                    if skip > 0 || hidden(el) {
                        skip += 1;
                    } else if BLOCK.contains(&el.name()) {
                        out.push('\n');
                    }
                }
                Node::Text(t) if skip == 0 => out.push_str(t),
                _ => {}
            },
            Edge::Close(node) => {
                if let Node::Element(el) = node.value() {
                    if skip > 0 {
                        skip -= 1;
                    } else if BLOCK.contains(&el.name()) {
                        out.push('\n');
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_visible_text_with_entities_decoded() {
        let page = r#"<!doctype html><html><head><title>T</title><style>p{}</style>
            <script>var x = "hidden";</script></head>
            <body><nav>Home | About</nav>
            <p>Caf&eacute; &amp; <b>bi</b>stro&nbsp;menu</p><div hidden>secret</div>
            <span style="display: none">nope</span><p aria-hidden="true">no</p>
            <ul><li>one</li><li>two</li></ul><br>end</body></html>"#;
        let t = visible_text(page);
        let words: Vec<&str> = t.split_whitespace().collect();
        assert_eq!(words, ["Café", "&", "bistro", "menu", "one", "two", "end"]);
    }

    #[test]
    fn malformed_markup_is_not_an_error() {
        let t = visible_text("<p>unclosed <b>bold <i>both</p> after </div></span> &bogus; <");
        assert!(t.contains("unclosed") && t.contains("after") && t.contains("&bogus;"));
        assert_eq!(visible_text("").trim(), "");
    }
}
