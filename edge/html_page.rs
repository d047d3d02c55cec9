//! The server-rendered pages of the OAuth consent screen and the dashboard: one look, no
//! scripts, usable on a phone.

use axum::response::{Html, IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};

/// A small page in the dashboard's look.
pub fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · lps</title><style>{STYLE}</style></head>\
         <body><main><h1>{title}</h1>{body}</main></body></html>",
        title = escape(title),
    );
    let mut response = (status, Html(html)).into_response();
    response.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
        ),
    );
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    // For browsers that predate CSP's frame-ancestors: never framed (clickjacking).
    response
        .headers_mut()
        .insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

pub const STYLE: &str = "body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f8fafc;color:#0f172a}\
main{max-width:42rem;margin:0 auto;padding:1.5rem}h1{font-size:1.5rem}\
fieldset{border:1px solid #cbd5e1;border-radius:.5rem;margin:1rem 0}\
.choice{display:block;padding:.5rem 0}input[type=text],input[type=email],input[type=password]\
{width:100%;padding:.6rem;font:inherit;border:1px solid #94a3b8;border-radius:.4rem;box-sizing:border-box}\
button{font:inherit;padding:.6rem 1.2rem;border-radius:.4rem;border:0;background:#0f766e;color:#fff;cursor:pointer}\
button.secondary{background:#e2e8f0;color:#0f172a}table{width:100%;border-collapse:collapse}\
td,th{text-align:left;padding:.4rem;border-bottom:1px solid #e2e8f0}code{word-break:break-all}\
.error{color:#b91c1c}label{display:block;margin:.6rem 0 .2rem}";

/// Text for HTML (minijinja's escaping, as the templates use).
pub fn escape(text: &str) -> String {
    minijinja::HtmlEscape(text).to_string()
}
