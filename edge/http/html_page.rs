//! The server-rendered screens of the dashboard and the OAuth consent: one look (the layout
//! in `templates/layout.html`), usable on a phone and without scripts (a face may add one
//! first-party script). Each face keeps its screens'
//! templates beside it and renders them through [`Screens`]: minijinja with HTML
//! auto-escaping, so a name a person typed can never become markup, and strict undefined
//! variables, so a template naming a value its screen does not give fails (a logged 500, never
//! a blank where the value should be). `tests/api/screens.rs` opens every screen.

use std::sync::LazyLock;

use axum::response::{Html, IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use minijinja::value::Serde;
use minijinja::{AutoEscape, Environment, UndefinedBehavior, Value, context};
use serde::Serialize;

const LAYOUT: &str = "layout.html";
const MESSAGE: &str = "message.html";

/// A face's screen templates, with the shared layout and one-message screen.
pub struct Screens {
    env: Environment<'static>,
    /// Links every screen of the face shows at its top (`href`, text).
    nav: Vec<(&'static str, &'static str)>,
    /// Screens a signed-out person sees (signing in, setting a password): shown without the
    /// links, which would only lead back to signing in.
    signed_out: Vec<&'static str>,
    /// The face's first-party script, if it has one (screens work without it).
    script: Option<&'static str>,
}

impl Screens {
    /// The templates by name (`include_str!` of the face's `templates/` files).
    pub fn new(templates: &[(&'static str, &'static str)]) -> Self {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::Html);
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        for (name, source) in [
            (LAYOUT, include_str!("templates/layout.html")),
            (MESSAGE, include_str!("templates/message.html")),
        ]
        .iter()
        .chain(templates)
        {
            env.add_template(name, source)
                .unwrap_or_else(|err| panic!("the screen template {name} compiles: {err}"));
        }
        Self {
            env,
            nav: Vec::new(),
            signed_out: Vec::new(),
            script: None,
        }
    }

    /// Every screen loads this first-party script (deferred).
    pub fn with_script(mut self, path: &'static str) -> Self {
        self.script = Some(path);
        self
    }

    /// Every screen with these links at its top (`href`, text).
    pub fn with_nav(mut self, nav: &[(&'static str, &'static str)]) -> Self {
        self.nav = nav.to_vec();
        self
    }

    /// These screens (template names) are for signed-out people: no links at their top.
    pub fn signed_out(mut self, templates: &[&'static str]) -> Self {
        self.signed_out = templates.to_vec();
        self
    }

    /// The screen `template` rendered with `context`, in the layout under `title`.
    pub fn page(
        &self,
        status: StatusCode,
        title: &str,
        template: &str,
        context: impl Serialize,
    ) -> Response {
        self.page_with_notice(status, title, template, context, None::<()>)
    }

    /// [`Screens::page`] whose form's answer redirects to `form_target` (a CSP source, see
    /// [`form_target_source`]) besides this origin.
    pub fn page_posting_to(
        &self,
        status: StatusCode,
        title: &str,
        template: &str,
        context: impl Serialize,
        form_target: &str,
    ) -> Response {
        let response = self.page_with_notice(status, title, template, context, None::<()>);
        with_screen_headers(response, Some(form_target))
    }

    /// [`Screens::page`] that first says what the last action did (`notice`: `text`, `alert`
    /// for a failure, `secret` for a value shown once).
    pub fn page_with_notice(
        &self,
        status: StatusCode,
        title: &str,
        template: &str,
        context: impl Serialize,
        notice: Option<impl Serialize>,
    ) -> Response {
        let nav: &[(&str, &str)] = if self.signed_out.contains(&template) {
            &[]
        } else {
            &self.nav
        };
        let page = self
            .render(template, Value::from(Serde(context)))
            .and_then(|body| {
                self.render(
                    LAYOUT,
                    context! {
                        title,
                        body => Value::from_safe_string(body),
                        nav => Serde(nav),
                        notice => Serde(notice),
                        script => self.script,
                    },
                )
            });
        match page {
            Ok(html) => with_screen_headers((status, Html(html)).into_response(), None),
            Err(err) => {
                // A template bug is a programming error: logged, and a 500, never a 200.
                tracing::error!(template, error = %err, "a screen could not be rendered");
                with_screen_headers(
                    (StatusCode::INTERNAL_SERVER_ERROR, Html(COULD_NOT_BE_SHOWN)).into_response(),
                    None,
                )
            }
        }
    }

    /// A part shown on several screens (a template of its own, e.g. the range picker),
    /// rendered for a screen's context to show as it is: this crate's minijinja has no
    /// `include` (designs, parsed by the same crate, must not have it either).
    pub fn part(&self, template: &str, context: impl Serialize) -> Value {
        match self.render(template, Value::from(Serde(context))) {
            Ok(html) => Value::from_safe_string(html),
            Err(err) => {
                tracing::error!(template, error = %err, "a part of a screen could not be rendered");
                Value::from(())
            }
        }
    }

    fn render(&self, template: &str, context: Value) -> Result<String, minijinja::Error> {
        self.env.get_template(template)?.render(context)
    }
}

/// What a screen that failed to render says (plain HTML: the layout itself may have failed).
const COULD_NOT_BE_SHOWN: &str = "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<title>Something went wrong</title></head><body><h1>Something went wrong</h1>\
<p>This page could not be shown. It has been logged; please try again later.</p></body></html>";

/// A link on a one-message screen.
#[derive(Serialize)]
pub struct Link<'a> {
    pub href: &'a str,
    pub text: &'a str,
}

/// A screen that says one thing: a title, a sentence and, optionally, where to go next.
pub fn message(status: StatusCode, title: &str, sentence: &str, link: Option<Link>) -> Response {
    static PLAIN: LazyLock<Screens> = LazyLock::new(|| Screens::new(&[]));
    PLAIN.page(
        status,
        title,
        MESSAGE,
        context! { sentence, link => Serde(link) },
    )
}

/// Who may show a preview in a frame.
pub enum Framing {
    /// Nobody (the REST preview).
    Never,
    /// This site's own screens (the dashboard's gallery of templates).
    SameOrigin,
}

/// A previewed lead page as it is (the REST preview and the dashboard's): no script runs in
/// it, nothing is loaded to count it, it is never cached. Whoever can write a draft (a key, an
/// app, a member, a model) wrote what it shows, and the person looking is signed in on this
/// origin: so it is sandboxed (an opaque origin, as in a `sandbox` frame: no forms, no
/// scripts, no popups, no navigating the window above), may submit nothing anywhere
/// (`form-action 'none'`), and loads images and fonts only from lps itself (its assets) or
/// `data:`, so nothing outside learns when it is looked at.
pub fn preview(html: String, framing: Framing) -> Response {
    let mut response = Html(html).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(match framing {
            Framing::Never => {
                "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; \
                 font-src 'self' data:; form-action 'none'; base-uri 'none'; \
                 frame-ancestors 'none'"
            }
            Framing::SameOrigin => {
                "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; \
                 font-src 'self' data:; form-action 'none'; base-uri 'none'; \
                 frame-ancestors 'self'"
            }
        }),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    response
}

/// A screen's Content-Security-Policy: nothing loaded from elsewhere (its own script, its own
/// event streams and its own previews in frames at most), never framed (clickjacking), and its forms post to this
/// origin only (`also`: one more place a form's answer may redirect to, as the OAuth consent's
/// does to the app's redirect URI).
fn screen_policy(also: Option<&str>) -> HeaderValue {
    const POLICY: &str = "default-src 'none'; style-src 'unsafe-inline'; script-src 'self'; \
                          connect-src 'self'; frame-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
                          form-action 'self'";
    match also {
        None => HeaderValue::from_static(POLICY),
        Some(source) => HeaderValue::from_str(&format!("{POLICY} {source}"))
            .unwrap_or_else(|_| HeaderValue::from_static(POLICY)),
    }
}

/// Screens are never cached, never framed, and post only where [`screen_policy`] says.
fn with_screen_headers(mut response: Response, form_target: Option<&str>) -> Response {
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_SECURITY_POLICY, screen_policy(form_target));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // For browsers that predate CSP's frame-ancestors.
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

/// The CSP source of where a form's answer may redirect to: a URL's scheme, host and port
/// (`https://app.example:8443`), or its scheme alone for a private-use scheme
/// (`com.example.app:`). `None` for what is no URL.
pub fn form_target_source(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    match url.scheme() {
        "http" | "https" => {
            let host = url.host_str()?;
            Some(match url.port() {
                Some(port) => format!("{}://{host}:{port}", url.scheme()),
                None => format!("{}://{host}", url.scheme()),
            })
        }
        scheme => Some(format!("{scheme}:")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn what_a_person_typed_is_text_never_markup() {
        let response = message(
            StatusCode::OK,
            "<b>Title</b>",
            "<script>alert(1)</script>",
            Some(Link {
                href: "/dashboard",
                text: "Back",
            }),
        );
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        let html = String::from_utf8(body.to_vec()).unwrap();
        assert!(
            html.contains("&lt;script&gt;alert(1)&lt;&#x2f;script&gt;"),
            "{html}"
        );
        assert!(
            html.contains("<title>&lt;b&gt;Title&lt;&#x2f;b&gt; · lps</title>"),
            "{html}"
        );
        assert!(
            html.contains("<a href=\"&#x2f;dashboard\">Back</a>"),
            "{html}"
        );
    }
}
