//! OpenTelemetry traces, when `--otlp-endpoint` is given (off by default: then nothing here
//! runs but one relaxed atomic load where a context would be propagated).
//!
//! `tracing` spans become OpenTelemetry spans (`tracing-opentelemetry`), exported in batches by
//! the official OTLP exporter over gRPC or HTTP (protobuf). One request is one trace: the edge's
//! request span takes its parent from the caller's W3C `traceparent`; core's calls are its
//! children (in process directly; over the network the edge puts the context on the call's
//! gRPC metadata, [`inject`], and core's gatekeeper continues it, [`continue_from`]); each SQL statement becomes a client span named by its kind and table
//! ([`SqlSpans`]: from sqlx's statement events, the statement's text without values); outbound
//! calls (callbacks, enrichment fetches, the model) carry `traceparent` too.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::{
    Span as _, SpanKind, TraceContextExt, Tracer as _, TracerProvider as _,
};
use opentelemetry::{Context, KeyValue, global};
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;

static ENABLED: AtomicBool = AtomicBool::new(false);
/// The share of traces recorded, in millionths (sampled at the edge, before any span exists).
static SAMPLE_PER_MILLION: AtomicU32 = AtomicU32::new(1_000_000);
static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();
/// The tracer SQL statements' spans are made with (taken once: the global one is behind a
/// lock).
static TRACER: OnceLock<opentelemetry_sdk::trace::SdkTracer> = OnceLock::new();

/// How spans travel to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Protocol {
    /// OTLP over gRPC (a collector's port 4317).
    Grpc,
    /// OTLP over HTTP with protobuf bodies (port 4318, `/v1/traces`).
    Http,
}

/// Whether traces are being recorded.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Starts exporting to `endpoint` and answers the `tracing` layers that feed it: spans, and
/// SQL statements as spans. The W3C trace-context propagator becomes the global one.
pub fn start<S>(
    endpoint: &str,
    protocol: Protocol,
    service_name: &str,
    sample_ratio: f64,
) -> anyhow::Result<Vec<Box<dyn tracing_subscriber::Layer<S> + Send + Sync>>>
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a> + Send + Sync,
{
    use opentelemetry_otlp::{SpanExporter, WithExportConfig};
    use tracing_subscriber::Layer as _;
    let exporter = match protocol {
        Protocol::Grpc => SpanExporter::builder()
            .with_tonic()
            .with_endpoint(endpoint)
            .build()?,
        Protocol::Http => SpanExporter::builder()
            .with_http()
            .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
            .with_endpoint(http_traces_endpoint(endpoint))
            .build()?,
    };
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(
            opentelemetry_sdk::Resource::builder()
                .with_service_name(service_name.to_owned())
                .build(),
        )
        .build();
    let tracer = provider.tracer("lps");
    let _ = TRACER.set(tracer.clone());
    global::set_tracer_provider(provider.clone());
    global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
    let _ = PROVIDER.set(provider);
    SAMPLE_PER_MILLION.store(
        (sample_ratio.clamp(0.0, 1.0) * 1_000_000.0) as u32,
        Ordering::Relaxed,
    );
    ENABLED.store(true, Ordering::Relaxed);
    // Only the spans of recorded traces (made with an `otel.kind`, see [`wanted`]) reach
    // OpenTelemetry: a request not sampled costs no OpenTelemetry work at all.
    let spans = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_filter(tracing_subscriber::filter::filter_fn(is_traced))
        .boxed();
    let statements = SqlSpans
        .with_filter(
            tracing_subscriber::filter::Targets::new()
                .with_target("sqlx::query", tracing::Level::TRACE),
        )
        .boxed();
    Ok(vec![spans, statements])
}

/// Whether a span is one of a recorded trace's: made with an `otel.kind` field.
fn is_traced(metadata: &tracing::Metadata<'_>) -> bool {
    metadata.is_span() && metadata.fields().field("otel.kind").is_some()
}

/// Traces a caller may have recorded by its `traceparent`'s sampled flag, per second and
/// process; past it the flag counts for nothing and the sample ratio decides. Anyone can send
/// the flag: without a bound, a stranger could have every request traced (about half the
/// throughput, see benches/README.md).
pub const CALLER_SAMPLED_PER_SECOND: u32 = 100;
/// This second's caller-sampled traces: the second (Unix) in the high 40 bits, the count in
/// the low 24.
static CALLER_SAMPLED: AtomicU64 = AtomicU64::new(0);

/// Whether a request (or call) arriving with `headers` starts a recorded trace: its caller's
/// `traceparent` decides when it has one (not sampled: no; sampled: yes, up to
/// [`CALLER_SAMPLED_PER_SECOND`]), else the sample ratio.
pub fn sampled(headers: &http::HeaderMap) -> bool {
    if !enabled() {
        return false;
    }
    match headers.get("traceparent").and_then(|v| v.to_str().ok()) {
        Some(traceparent) if traceparent.len() >= 55 && traceparent.ends_with("-00") => false,
        Some(traceparent) if traceparent.len() >= 55 && traceparent.ends_with("-01") => {
            let second = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            admit(&CALLER_SAMPLED, second, CALLER_SAMPLED_PER_SECOND) || sample_root()
        }
        _ => sample_root(),
    }
}

/// Counts one more in `second`'s window; whether it is within `limit`.
fn admit(window: &AtomicU64, second: u64, limit: u32) -> bool {
    let mut current = window.load(Ordering::Relaxed);
    loop {
        let (at, count) = (current >> 24, current & 0xFF_FFFF);
        let count = if at == second { count } else { 0 };
        if count >= u64::from(limit) {
            return false;
        }
        let next = (second << 24) | (count + 1);
        match window.compare_exchange_weak(current, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return true,
            Err(seen) => current = seen,
        }
    }
}

/// A new trace's draw against the sample ratio.
fn sample_root() -> bool {
    let per_million = SAMPLE_PER_MILLION.load(Ordering::Relaxed);
    per_million >= 1_000_000 || rand::random_range(0..1_000_000) < per_million
}

/// Whether a span made now belongs to a recorded trace: under a span of one, or, outside any
/// span (background work: a callback, a fetch), a new trace drawn against the sample ratio.
pub fn wanted() -> bool {
    if !enabled() {
        return false;
    }
    let current = tracing::Span::current();
    match current.metadata() {
        Some(metadata) => is_traced(metadata),
        None => current.is_none() && sample_root(),
    }
}

/// Runs `work` in the span `span` makes when it belongs to a recorded trace ([`wanted`]),
/// else as it is.
pub async fn traced<F: std::future::Future>(
    span: impl FnOnce() -> tracing::Span,
    work: F,
) -> F::Output {
    use tracing::Instrument;
    if wanted() {
        work.instrument(span()).await
    } else {
        work.await
    }
}

/// Sends what is still buffered (at shutdown).
pub fn finish() {
    if let Some(provider) = PROVIDER.get()
        && let Err(err) = provider.shutdown()
    {
        tracing::warn!(error = %err, "spans not exported at shutdown");
    }
}

/// OTLP/HTTP's traces path on an endpoint given as a collector's base address.
fn http_traces_endpoint(endpoint: &str) -> String {
    match url::Url::parse(endpoint) {
        Ok(url) if url.path() == "/" || url.path().is_empty() => {
            format!("{}/v1/traces", endpoint.trim_end_matches('/'))
        }
        _ => endpoint.to_owned(),
    }
}

/// Makes `span`, a root of this process's spans (an incoming request or call), continue the
/// trace whose context `headers` carry (`traceparent`), if any, and records its trace id on
/// the span's `trace_id` field (so log lines in it carry it).
pub fn continue_from(span: &tracing::Span, headers: &http::HeaderMap) {
    if !enabled() {
        return;
    }
    if headers.contains_key("traceparent") {
        let parent = global::get_text_map_propagator(|propagator| {
            propagator.extract(&HeaderExtractor(headers))
        });
        if parent.span().span_context().is_valid() {
            let _ = span.set_parent(parent);
        }
    }
    let trace_id = span.context().span().span_context().trace_id();
    span.record("trace_id", tracing::field::display(trace_id));
}

/// Puts the current span's context on `headers` (`traceparent`), for the next hop.
pub fn inject(headers: &mut http::HeaderMap) {
    if !enabled() {
        return;
    }
    let context = tracing::Span::current().context();
    global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut HeaderInjector(headers))
    });
}

struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

struct HeaderInjector<'a>(&'a mut http::HeaderMap);

impl Injector for HeaderInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(key.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            self.0.insert(name, value);
        }
    }
}

/// A `tracing` layer turning each statement sqlx reports (`sqlx::query` events, sent when a
/// statement finishes, with its text and duration) into a client span under the current span:
/// named by what it does (`SELECT leads`), with `db.query.text`: the statement with its
/// placeholders, never its values.
pub struct SqlSpans;

impl<S> tracing_subscriber::Layer<S> for SqlSpans
where
    S: tracing::Subscriber + for<'a> tracing_subscriber::registry::LookupSpan<'a>,
{
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        if event.metadata().target() != "sqlx::query" {
            return;
        }
        let mut statement = Statement::default();
        event.record(&mut statement);
        let (Some(text), Some(tracer)) = (statement.text, TRACER.get()) else {
            return;
        };
        let parent: Context = tracing::Span::current().context();
        // A statement of a request not sampled is not recorded either.
        if !parent.span().span_context().is_sampled() {
            return;
        }
        let ended = SystemTime::now();
        let started = ended - Duration::from_secs_f64(statement.seconds.max(0.0));
        let mut span = tracer
            .span_builder(statement_name(&text))
            .with_kind(SpanKind::Client)
            .with_start_time(started)
            .with_attributes([KeyValue::new("db.query.text", text)])
            .start_with_context(tracer, &parent);
        span.end_with_timestamp(ended);
    }
}

/// What a `sqlx::query` event says of its statement.
#[derive(Default)]
struct Statement {
    text: Option<String>,
    seconds: f64,
}

impl tracing::field::Visit for Statement {
    fn record_str(&mut self, field: &tracing::field::Field, value: &str) {
        if field.name() == "db.statement" || (field.name() == "summary" && self.text.is_none()) {
            // The full text when sqlx gives it (the summary is its first words).
            if !value.is_empty() {
                self.text = Some(value.trim().to_owned());
            }
        }
    }

    fn record_f64(&mut self, field: &tracing::field::Field, value: f64) {
        if field.name() == "elapsed_secs" {
            self.seconds = value;
        }
    }

    fn record_debug(&mut self, _: &tracing::field::Field, _: &dyn std::fmt::Debug) {}
}

/// A statement's name: its verb and the table it acts on (`SELECT leads`, `INSERT page_events`),
/// as OpenTelemetry's database conventions name spans.
pub fn statement_name(sql: &str) -> String {
    let words: Vec<&str> = sql
        .split(|c: char| c.is_whitespace() || c == '(' || c == ',')
        .filter(|w| !w.is_empty())
        .collect();
    let Some(verb) = words.first() else {
        return "SQL".to_owned();
    };
    let verb = verb.to_ascii_uppercase();
    let after = |keyword: &str| {
        words
            .iter()
            .position(|w| w.eq_ignore_ascii_case(keyword))
            .and_then(|i| words.get(i + 1))
            .map(|table| table.trim_matches('"').to_owned())
    };
    let table = match verb.as_str() {
        "SELECT" | "DELETE" => after("FROM"),
        "INSERT" => after("INTO"),
        "UPDATE" => words.get(1).map(|t| t.to_string()),
        "WITH" => after("FROM"),
        _ => None,
    };
    match table {
        Some(table) => format!("{verb} {table}"),
        None => verb,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_named_by_verb_and_table_never_values() {
        assert_eq!(
            statement_name("SELECT id FROM leads WHERE id = $1"),
            "SELECT leads"
        );
        assert_eq!(
            statement_name("INSERT INTO page_events (a, b) VALUES ($1, $2)"),
            "INSERT page_events"
        );
        assert_eq!(
            statement_name("UPDATE callbacks SET x = 1"),
            "UPDATE callbacks"
        );
        assert_eq!(statement_name("delete from erasures"), "DELETE erasures");
        assert_eq!(statement_name("BEGIN IMMEDIATE"), "BEGIN");
        assert_eq!(statement_name(""), "SQL");
    }

    #[test]
    fn an_http_endpoint_without_a_path_gets_the_traces_path() {
        assert_eq!(
            http_traces_endpoint("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/traces"
        );
        assert_eq!(
            http_traces_endpoint("http://collector/otlp/v1/traces"),
            "http://collector/otlp/v1/traces"
        );
    }

    #[test]
    fn callers_may_have_only_so_many_traces_recorded_a_second() {
        let window = AtomicU64::new(0);
        let admitted = (0..150)
            .filter(|_| admit(&window, 1_700_000_000, 100))
            .count();
        assert_eq!(admitted, 100);
        assert!(
            admit(&window, 1_700_000_001, 100),
            "a new second, a new allowance"
        );
    }

    #[test]
    fn nothing_is_propagated_while_tracing_is_off() {
        let mut headers = http::HeaderMap::new();
        inject(&mut headers);
        assert!(headers.is_empty());
    }
}
