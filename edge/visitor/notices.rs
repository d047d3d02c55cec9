//! The notices a visitor may see instead of a lead's page, decided and rendered here only
//! (core says what a visit led to; the edge also needs them when core cannot be reached). One
//! template (`templates/notice.html` beside it), auto-escaped.

use std::sync::LazyLock;

use minijinja::{AutoEscape, Environment, UndefinedBehavior, context};

static TEMPLATES: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    env.set_auto_escape_callback(|_| AutoEscape::Html);
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.add_template("notice.html", include_str!("templates/notice.html"))
        .expect("the notice template compiles");
    env
});

/// What a visitor is told.
pub enum Notice<'a> {
    /// The campaign has no published design.
    NotLive,
    /// The address is no page.
    NotFound,
    /// The page cannot be shown right now (core unreachable, or the page over its budget).
    Unavailable,
    /// A form was sent without JavaScript; `back` is the page's path.
    ThankYou { back: &'a str },
    /// Too many forms from the visitor's address.
    SlowDown,
    /// A heading and one sentence of its own.
    Other { heading: &'a str, sentence: &'a str },
}

impl Notice<'_> {
    /// The whole HTML document.
    pub fn html(&self) -> String {
        self.render().unwrap_or_else(|err| {
            // Only a template bug gets here (every variant renders in the test below).
            tracing::error!(error = %err, "a visitor notice could not be rendered");
            "<!doctype html><title>Notice</title><p>This page could not be shown.</p>".to_owned()
        })
    }

    fn render(&self) -> Result<String, minijinja::Error> {
        let (title, heading, sentence, back) = match self {
            Self::NotLive => (
                "Not live yet",
                "This page is not live yet",
                "It is being prepared. Please check back soon.",
                None,
            ),
            Self::NotFound => (
                "Page not found",
                "Page not found",
                "This link does not lead to a page.",
                None,
            ),
            Self::Unavailable => (
                "Temporarily unavailable",
                "Temporarily unavailable",
                "Please try again in a moment.",
                None,
            ),
            Self::ThankYou { back } => (
                "Thank you",
                "Thank you",
                "Your message has been received.",
                Some(*back),
            ),
            Self::SlowDown => (
                "Please wait",
                "Please wait a moment",
                "Too many submissions from your address; try again in a minute.",
                None,
            ),
            Self::Other { heading, sentence } => (*heading, *heading, *sentence, None),
        };
        TEMPLATES
            .get_template("notice.html")?
            .render(context! { title, heading, sentence, back })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_notice_renders_its_template() {
        let heading = "Too large";
        for notice in [
            Notice::NotLive,
            Notice::NotFound,
            Notice::Unavailable,
            Notice::ThankYou { back: "/p/a/b" },
            Notice::SlowDown,
            Notice::Other {
                heading,
                sentence: "x",
            },
        ] {
            let html = notice.render().expect("every notice renders");
            assert!(html.starts_with("<!doctype html>"), "{html}");
        }
    }

    #[test]
    fn notices_escape_what_they_show() {
        let page = Notice::ThankYou {
            back: "/p/a/b\"><script>",
        }
        .html();
        assert!(page.contains("Back to the page"), "{page}");
        assert!(!page.contains("<script>"), "{page}");
        let other = Notice::Other {
            heading: "<b>Too large</b>",
            sentence: "x",
        }
        .html();
        assert!(other.contains("&lt;b&gt;Too large"), "{other}");
    }
}
