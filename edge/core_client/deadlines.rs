//! Every call a separate edge makes to core over the network has a deadline: a core that is
//! paused, stuck or gone costs a caller at most that long (answered 503 with `Retry-After`),
//! never a hang. The deadline covers the call until core starts answering; a stream
//! (`Watch*`) then runs as long as it lasts. Most calls get [`DEFAULT`]; the few whose work
//! grows with what they carry get longer ([`deadline_of`]). In `lps serve` core runs in the
//! same process and no deadline is needed.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tower::Service;

use super::TransportError;

/// A call's deadline unless [`deadline_of`] says otherwise.
pub const DEFAULT: Duration = Duration::from_secs(5);
/// Calls that carry or touch many leads (an upsert of 16 MiB, an erasure of 1,000 leads).
pub const BULK: Duration = Duration::from_secs(60);
/// Calls that audit a design (its every branch rendered at the longest values).
pub const DESIGN: Duration = Duration::from_secs(30);

/// Calls that fetch a branding's images before answering (side by side, each within 5 s to
/// connect and 10 s in all).
pub const IMAGES: Duration = Duration::from_secs(20);

/// The deadline of the call to `path` (`/lps.v1.Service/Method`).
pub fn deadline_of(path: &str) -> Duration {
    let method = path.rsplit('/').next().unwrap_or_default();
    match method {
        "UpsertLeads" | "ImportLeads" | "DeleteLeads" | "ExportLead" | "EnrichLeads"
        | "AddLeads" | "RemoveLeads" | "CreateAudience" | "RecordBeacons" => BULK,
        "UpdateDesign" | "Publish" | "ApplyTemplate" | "CreateTemplate" | "PreviewDraft"
        | "GenerateDesign" | "UpdateCampaign" | "CreateCampaign" => DESIGN,
        "CreateBranding" | "UpdateBranding" => IMAGES,
        _ => DEFAULT,
    }
}

/// A transport whose every call ends by its deadline.
#[derive(Clone)]
pub struct Deadlines<S> {
    inner: S,
}

impl<S> Deadlines<S> {
    pub fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S> Service<http::Request<tonic::body::Body>> for Deadlines<S>
where
    S: Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = TransportError,
        >,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = TransportError;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, TransportError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), TransportError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let deadline = deadline_of(request.uri().path());
        let call = self.inner.call(request);
        Box::pin(async move {
            tokio::time::timeout(deadline, call)
                .await
                .unwrap_or_else(|_| {
                    Err(TransportError(
                        format!("core did not answer within {} s", deadline.as_secs()).into(),
                    ))
                })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bulk_and_design_calls_get_longer_and_everything_else_the_default() {
        assert_eq!(deadline_of("/lps.v1.LeadsService/UpsertLeads"), BULK);
        assert_eq!(deadline_of("/lps.v1.PagesService/UpdateDesign"), DESIGN);
        assert_eq!(
            deadline_of("/lps.v1.CampaignsService/UpdateBranding"),
            IMAGES
        );
        assert_eq!(deadline_of("/lps.v1.AccountService/HelloWorld"), DEFAULT);
        assert_eq!(deadline_of("/lps.v1.JobsService/WatchJob"), DEFAULT);
    }
}
