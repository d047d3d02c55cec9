//! tonic service implementations: each converts its proto request into domain values (every
//! bad field reported at once), calls a function of [`crate::domain`], and converts back.
//! Conversions between proto and domain types sit at the bottom of each file.

mod account;
mod api_tokens;
mod audiences;
mod callbacks;
mod campaigns;
mod csv_imports;
mod engagement;
mod idempotency;
mod identity;
mod jobs;
mod leads;
mod oauth;
mod operations;
mod pages;
mod visit_classes;
mod visitor;
mod workspaces;

pub use account::AccountService;
pub use api_tokens::ApiTokensService;
pub use audiences::AudiencesService;
pub use callbacks::CallbacksService;
pub use campaigns::CampaignsService;
pub use engagement::EngagementService;
pub use idempotency::IdempotencyService;
pub use identity::IdentityService;
pub use jobs::JobsService;
pub use leads::LeadsService;
pub use oauth::OAuthService;
pub use operations::OperationsService;
pub use pages::PagesService;
pub use visitor::VisitorService;
pub use workspaces::WorkspacesService;

/// A server stream of one object's state, for `WatchJob` and `WatchDesignRun`.
pub(crate) type WatchStream<P> =
    std::pin::Pin<Box<dyn tokio_stream::Stream<Item = Result<P, tonic::Status>> + Send>>;

/// How often a watch re-reads the state when no event arrives (events from another SQLite
/// process, say, are only seen this way).
const WATCH_POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// Streams `first`, then the state `read` gives each time it differs from the last one sent,
/// until `ended` holds for a sent state, `read` fails (its error is the last item) or the
/// caller hangs up. A state is re-read on every event naming `id` and at least every second.
/// Subscribe to `events` before reading `first`, so no change falls between the two.
pub(crate) fn watch_until_ended<P, F, Fut>(
    mut events: tokio::sync::broadcast::Receiver<String>,
    id: String,
    first: P,
    mut read: F,
    ended: fn(&P) -> bool,
) -> WatchStream<P>
where
    P: PartialEq + Clone + Send + 'static,
    F: FnMut() -> Fut + Send + 'static,
    Fut: std::future::Future<Output = Result<P, tonic::Status>> + Send,
{
    let (sender, receiver) = tokio::sync::mpsc::channel(16);
    tokio::spawn(async move {
        let mut last: Option<P> = None;
        let mut current = Ok(first);
        loop {
            let state = match current {
                Ok(state) => state,
                Err(status) => {
                    let _ = sender.send(Err(status)).await;
                    return;
                }
            };
            if last.as_ref() != Some(&state) {
                if sender.send(Ok(state.clone())).await.is_err() {
                    return;
                }
                last = Some(state.clone());
            }
            if ended(&state) {
                return;
            }
            // Until this object changes (or a poll is due, or the client goes away).
            let deadline = tokio::time::sleep(WATCH_POLL);
            tokio::pin!(deadline);
            loop {
                tokio::select! {
                    event = events.recv() => match event {
                        Ok(changed) if changed == id => break,
                        Ok(_) => continue,
                        Err(_) => break,
                    },
                    _ = &mut deadline => break,
                    _ = sender.closed() => return,
                }
            }
            current = read().await;
        }
    });
    Box::pin(tokio_stream::wrappers::ReceiverStream::new(receiver))
}

/// A `google.protobuf.Value` as JSON (numbers that are whole stay integers).
pub(crate) fn json_of(value: prost_types::Value) -> serde_json::Value {
    use prost_types::value::Kind;
    match value.kind {
        None | Some(Kind::NullValue(_)) => serde_json::Value::Null,
        Some(Kind::BoolValue(b)) => b.into(),
        Some(Kind::StringValue(s)) => s.into(),
        Some(Kind::NumberValue(n)) if n.fract() == 0.0 && n.abs() < 9e15 => (n as i64).into(),
        Some(Kind::NumberValue(n)) => serde_json::Number::from_f64(n)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        Some(Kind::StructValue(object)) => json_object(object).into(),
        Some(Kind::ListValue(list)) => list.values.into_iter().map(json_of).collect(),
    }
}

/// A `google.protobuf.Struct` as a JSON object.
pub(crate) fn json_object(
    object: prost_types::Struct,
) -> serde_json::Map<String, serde_json::Value> {
    object
        .fields
        .into_iter()
        .map(|(key, value)| (key, json_of(value)))
        .collect()
}

/// Marks a call from an edge whose word on its clients' addresses is believed (see
/// `grpc::from_trusted_edge`): the addresses in visitors' forms and beacons are taken as sent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct TrustedEdge;

/// The address a visitor's form or beacon was sent from, as the call carries it (`asserted`):
/// believed from a trusted edge only; any other caller's own address stands in for it, so
/// nobody else can forge a visitor's address.
pub(crate) fn visitor_address<T>(
    request: &tonic::Request<T>,
) -> impl Fn(String) -> String + use<T> {
    let peer = (request.extensions().get::<TrustedEdge>().is_none()).then(|| {
        request
            .remote_addr()
            .map_or_else(|| "unknown".into(), |address| address.ip().to_string())
    });
    move |asserted| peer.clone().unwrap_or(asserted)
}

/// The client address the edge forwarded for this call, for per-address limits.
pub(crate) fn client_address_of<T>(request: &tonic::Request<T>) -> String {
    request
        .metadata()
        .get(crate::wire::CLIENT_ADDRESS)
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
        .or_else(|| {
            request
                .remote_addr()
                .map(|address| address.ip().to_string())
        })
        .unwrap_or_else(|| "unknown".into())
}
