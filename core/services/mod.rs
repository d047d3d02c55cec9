//! tonic service implementations: each converts its proto request into domain values (every
//! bad field reported at once), calls a function of [`crate::domain`], and converts back.
//! Conversions between proto and domain types sit at the bottom of each file.

mod account;
mod api_tokens;
mod audiences;
mod campaigns;
mod identity;
mod jobs;
mod leads;
mod pages;
mod workspaces;

pub use account::AccountService;
pub use api_tokens::ApiTokensService;
pub use audiences::AudiencesService;
pub use campaigns::CampaignsService;
pub use identity::IdentityService;
pub use jobs::JobsService;
pub use leads::LeadsService;
pub use pages::{PagesService, VisitorService};
pub use workspaces::WorkspacesService;
