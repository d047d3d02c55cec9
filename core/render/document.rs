//! The HTML document around a rendered design (its head, the inlined stylesheet, the tracking
//! script) and the one HTML escape lps writes text with.

pub(super) const TRACKING_SCRIPT_TAG: &str = "<script src=\"/p/track.js\" defer></script>\n";

/// The document around a rendered design: the CSS inlined in the head, and more in the head
/// (`head`, trusted markup).
/// A stylesheet as a `<style>` element may hold it: it cannot close its own element.
pub(super) fn style_text(css: &str) -> String {
    css.replace("</", "<\\/")
}

/// The page's document around its head's extra lines and its body; `title` escaped
/// ([`escape_html`]), `style` as [`style_text`] made it. Written piece by piece into one buffer
/// of the right size: it is every page's.
pub(super) fn document_with_head(title: &str, style: &str, head: &str, body: &str) -> String {
    const OPENING: &str = "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
    let pieces = [
        OPENING,
        title,
        "</title>\n<style>\n",
        style,
        "\n</style>\n",
        head,
        "</head>\n<body>\n",
        body,
        "\n</body>\n</html>\n",
    ];
    let mut document = String::with_capacity(pieces.iter().map(|piece| piece.len()).sum());
    for piece in pieces {
        document.push_str(piece);
    }
    document
}

/// Text made safe inside HTML content and attribute values, in one pass.
pub fn escape_html(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    // Writing into a `String` cannot fail.
    let _ = write_html_text(&mut escaped, text, true);
    escaped
}

/// Writes `text` with `&`, `<`, `>`, `"` and, when `apostrophe`, `'` as their entities, in one
/// pass: the one escape of a render's values (`write_escaped` in `design.rs`) and of the text lps writes
/// into a page's head ([`escape_html`]).
pub(super) fn write_html_text(
    out: &mut impl std::fmt::Write,
    text: &str,
    apostrophe: bool,
) -> std::fmt::Result {
    let mut from = 0;
    for (at, byte) in text.bytes().enumerate() {
        let escaped = match byte {
            b'&' => "&amp;",
            b'<' => "&lt;",
            b'>' => "&gt;",
            b'"' => "&quot;",
            b'\'' if apostrophe => "&#x27;",
            _ => continue,
        };
        out.write_str(&text[from..at])?;
        out.write_str(escaped)?;
        from = at + 1;
    }
    out.write_str(&text[from..])
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::render::design::CompiledDesign;

    #[test]
    fn css_cannot_close_its_style_element() {
        let style = style_text("a{} </style><script>x()</script>");
        let page = document_with_head("t", &style, "", "");
        assert!(!page.contains("</style><script>"));
        let design = CompiledDesign::compile("<p>hi</p>", "a{} </style><script>x()</script>");
        let page = design.unwrap().render(BTreeMap::new(), None).unwrap();
        assert!(!page.contains("</style><script>"));
    }

    #[test]
    fn html_is_escaped_in_one_pass_as_it_was_in_five() {
        for text in [
            "",
            "plain",
            "<a href=\"x\">Tom & Jerry's</a>",
            "&amp;",
            "\u{e9}<\u{1f600}>'",
        ] {
            let five = text
                .replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
                .replace('"', "&quot;")
                .replace('\'', "&#x27;");
            assert_eq!(escape_html(text), five);
        }
    }
}
