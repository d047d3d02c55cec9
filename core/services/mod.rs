//! tonic service implementations: each converts its proto request into domain values (every
//! bad field reported at once), calls a function of [`crate::domain`], and converts back.
//! Conversions between proto and domain types sit at the bottom of each file.

mod account;
mod api_tokens;
mod identity;
mod workspaces;

pub use account::AccountService;
pub use api_tokens::ApiTokensService;
pub use identity::IdentityService;
pub use workspaces::WorkspacesService;
