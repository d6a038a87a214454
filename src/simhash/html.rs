//! An HTML page's visible text, as a crawler's simhash wants it: parsed by html5ever (through
//! `scraper`), the spec-compliant parser browsers use, so malformed markup, entities and
//! character references come out as a browser would show them.
//!
//! Dropped with everything inside them: `head` (title, meta), `script`, `style`, `noscript`,
//! `template`, `nav`, `svg`, `iframe`, `object`, site boilerplate (`header`, `footer`, `aside`,
//! and the ARIA roles banner, navigation, contentinfo, complementary), and any element that is
//! hidden: the `hidden` attribute, `aria-hidden="true"`, or an inline style with
//! `display: none` or `visibility: hidden`. Block-level elements and `<br>` separate words; inline
//! ones do not
//! (`<b>wo</b>rd` is one word).

use ego_tree::iter::Edge;
use scraper::{Html, Node};

const DROPPED: &[&str] = &[
    "head", "script", "style", "noscript", "template", "nav", "svg", "iframe", "object", "embed",
    "canvas", "select", "button", "header", "footer", "aside",
];

/// ARIA landmark roles of site boilerplate (HTML rule 2): banner (site header), navigation,
/// contentinfo (site footer), complementary (sidebars).
const BOILERPLATE_ROLES: &[&str] = &["banner", "navigation", "contentinfo", "complementary"];

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
    if el.attr("role").is_some_and(|r| {
        r.split_ascii_whitespace()
            .any(|r| BOILERPLATE_ROLES.iter().any(|b| r.eq_ignore_ascii_case(b)))
    }) {
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

/// Deepest element nesting [`visible_text`] parses; deeper pages are reduced by
/// [`strip_tags`]. html5ever's tree builder checks the open-element stack for each tag, so a
/// page of n nested elements costs O(n^2) (100 000 nested `<div>`s took 17 s); no real page
/// nests this deep.
pub const MAX_DEPTH: usize = 512;

const VOID: &[&str] = &[
    "area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source",
    "track", "wbr",
];

/// An upper-bound estimate of the element nesting of `html`, stopping once it passes `limit`:
/// +1 for each start tag that is not void or self-closing, -1 for each end tag.
fn nesting_exceeds(html: &str, limit: usize) -> bool {
    let b = html.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while let Some(off) = b[i..].iter().position(|&c| c == b'<') {
        i += off + 1;
        match b.get(i) {
            Some(b'/') => depth = depth.saturating_sub(1),
            Some(c) if c.is_ascii_alphabetic() => {
                let name_end = b[i..]
                    .iter()
                    .position(|c| !c.is_ascii_alphanumeric())
                    .map_or(b.len(), |e| i + e);
                let name = html[i..name_end].to_ascii_lowercase();
                let close = b[name_end..].iter().position(|&c| c == b'>');
                let self_closing = close.is_some_and(|c| c > 0 && b[name_end + c - 1] == b'/');
                if !VOID.contains(&name.as_str()) && !self_closing {
                    depth += 1;
                    if depth > limit {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}

/// Text of `html` with every tag replaced by a space (the fallback for pages nested beyond
/// [`MAX_DEPTH`]): no element is dropped or hidden, entities stay as written.
pub fn strip_tags(html: &str) -> String {
    let mut out = String::with_capacity(html.len() / 2);
    let mut in_tag = false;
    for c in html.chars() {
        match (in_tag, c) {
            (false, '<') => in_tag = true,
            (true, '>') => {
                in_tag = false;
                out.push(' ');
            }
            (false, c) => out.push(c),
            (true, _) => {}
        }
    }
    out
}

/// The visible text of an HTML document (or fragment), words separated as a browser would.
/// Pages nested deeper than `MAX_DEPTH` elements are reduced by `strip_tags` instead (in
/// linear time).
pub fn visible_text(html: &str) -> String {
    if nesting_exceeds(html, MAX_DEPTH) {
        return strip_tags(html);
    }
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
    fn site_boilerplate_is_dropped() {
        let page = r#"<body><header>Logo Menu</header><div role="Navigation banner">links</div>
            <main><header>Article title</header><p>body text</p></main>
            <aside>related</aside><div role="contentinfo">legal</div>
            <section role="complementary">ads</section><footer>copyright</footer></body>"#;
        let t = visible_text(page);
        assert_eq!(t.split_whitespace().collect::<Vec<_>>(), ["body", "text"]);
    }

    #[test]
    fn absurd_nesting_takes_linear_time() {
        for n in [100_000usize, 200_000] {
            let page = format!("{}deep text{}", "<div>".repeat(n), "</div>".repeat(n));
            let t0 = std::time::Instant::now();
            let t = visible_text(&page);
            assert_eq!(t.split_whitespace().collect::<Vec<_>>(), ["deep", "text"]);
            // Quadratic parsing took 17 s and 129 s here; the fallback is linear.
            assert!(
                t0.elapsed() < std::time::Duration::from_secs(2),
                "{n}: {:?}",
                t0.elapsed()
            );
        }
        // Ordinary nesting, void elements and self-closing tags stay with the parser.
        let ok = format!(
            "{}<br><img src=x/><p>x</p>{}",
            "<div>".repeat(500),
            "</div>".repeat(500)
        );
        assert!(!nesting_exceeds(&ok, MAX_DEPTH));
        assert!(nesting_exceeds(&"<b>".repeat(513), MAX_DEPTH));
    }

    #[test]
    fn malformed_markup_is_not_an_error() {
        let t = visible_text("<p>unclosed <b>bold <i>both</p> after </div></span> &bogus; <");
        assert!(t.contains("unclosed") && t.contains("after") && t.contains("&bogus;"));
        assert_eq!(visible_text("").trim(), "");
    }
}
