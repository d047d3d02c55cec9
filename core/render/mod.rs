//! Lead pages: designs compiled once per published version (minijinja, HTML auto-escaping on
//! for every value, so a lead's values can never inject markup) and the document around them.
//! When there is no page to show, core says why (`RenderPageResponse.outcome`) and the edge
//! shows its notice (`edge/visitor/notices.rs`).
//!
//! By concern: `design.rs` compiles and renders a design, `context.rs` is what it can use,
//! `check.rs` refuses a design before it is stored, `document.rs` is the page around it,
//! `cache.rs` keeps compiled designs; `budget/` bounds what a render may cost.

pub mod budget;
pub mod contrast;
pub mod copy;
pub mod pool;
pub mod premade;
pub mod preview_image;
pub mod sanitise;

mod cache;
mod check;
mod context;
mod design;
mod document;

pub use cache::{Compiled, DesignCache};
#[cfg(test)]
pub use check::check;
pub use check::{checked, cleaned_and_checked, design_violation};
pub use context::{BrandingContext, PageContext, SenderContext, safe_color};
pub use design::CompiledDesign;
