//! Why one kind of enrichment found nothing for a lead, in words the caller reads (each kind's
//! failure is stored with the lead's enrichment and listed by the API).

use super::fetch::MAX_PAGE_BYTES;
use crate::llm::LlmError;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EnrichError {
    #[error("{0} is not a valid address.")]
    InvalidAddress(String),
    /// The outbound guard refused the address (private network, a scheme not allowed).
    #[error("{url} was not fetched: {reason}.")]
    Refused { url: String, reason: String },
    /// A quiet fetch could not connect (the caller tries another scheme).
    #[error("cannot connect")]
    CannotConnect,
    #[error("{0} did not answer in time.")]
    TimedOut(String),
    #[error("{0} could not be reached.")]
    Unreachable(String),
    #[error("{0} could not be fetched.")]
    NotFetched(String),
    #[error("{url} answered {status}.")]
    Status { url: String, status: String },
    #[error("{0} was cut off.")]
    CutOff(String),
    #[error("{0} is larger than {MAX_PAGE_BYTES} bytes.")]
    TooLarge(String),
    #[error("The profile page has no name, description or profile details.")]
    NoProfileDetails,
    #[error("No RSS or Atom feed is linked from {0}.")]
    NoFeedLinked(String),
    /// Feeds were found but none could be read: the page, and the last reason.
    #[error("No readable feed was found on {page}: {last}")]
    NoReadableFeed { page: String, last: String },
    #[error("the feed could not be read")]
    FeedUnreadable,
    #[error("the feed has no posts")]
    FeedEmpty,
    #[error("The analysis could not be written: {0}.")]
    AnalysisFailed(String),
    #[error("The model's answer could not be used: {0}.")]
    AnswerUnusable(String),
    #[error("The model wrote an empty analysis.")]
    EmptyAnalysis,
    #[error("The model wrote no opening line.")]
    NoOpeningLine,
    /// The lead's enrichment was taken up and lost (its process stopped) too many times.
    #[error("The enrichment was interrupted too many times.")]
    Interrupted,
    #[error("The lead no longer exists.")]
    LeadGone,
    #[error("The lead could not be read.")]
    LeadUnreadable,
}

impl From<LlmError> for EnrichError {
    fn from(err: LlmError) -> Self {
        match err {
            LlmError::Failed(problem) => Self::AnalysisFailed(problem),
            LlmError::Unusable(why) => Self::AnswerUnusable(why),
        }
    }
}
