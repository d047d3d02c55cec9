//! What one render of a design may cost, and the audit that refuses a design that could cost
//! more, before it is stored or compiled.
//!
//! A design is a stranger's program: an API key, an OAuth app, an assistant over MCP or a model
//! writes it, and every visitor runs it. Three bounds hold for every render:
//! - **instructions**: minijinja's fuel ([`FUEL`]): a loop cannot run forever;
//! - **output**: at most [`MAX_PAGE_BYTES`] written ([`Budgeted`]), and wall time at most
//!   [`RENDER_TIME`], checked every [`meter::WRITES_PER_CLOCK`] writes (fuel bounds what runs between
//!   two writes);
//! - **memory**: what fuel does not see (one instruction can build a string as long as its
//!   operands together). The audit allows only a language in which no value can outgrow the
//!   output bound: no string repetition (`*` multiplies numbers written in the design), no
//!   captures (`{% set %}...{% endset %}`, `{% filter %}`, macros, `caller()`), assignments that
//!   only name or lightly transform a value, filters and functions from an allow-list, and an
//!   estimate of every expression's size against [`MAX_PAGE_BYTES`].
//!
//! The audit also estimates a render's instructions, counting every branch and multiplying each
//! loop by how often it can run, so a design whose cost depends on a lead's values (a bomb
//! inside `{% if first_name %}`) is refused when it is submitted, not when a visitor comes.
//!
//! By concern: `audit.rs` is the audit of a design (before it is stored or compiled),
//! `meter.rs` the writer that holds one render to its output and time bounds.

mod audit;
mod meter;

use std::time::Duration;

pub use audit::{Audit, Refusal, audit};
pub use meter::{Budgeted, Exceeded};

/// Instructions one render may execute (minijinja's fuel). The premade designs take under a
/// thousand; at ~20 ns an instruction this is a few tens of milliseconds.
pub const FUEL: u64 = 2_000_000;

/// The most a rendered design (the page's body) may be; what a design is refused for at
/// submission when a lead with long values would exceed it.
pub const MAX_PAGE_BYTES: usize = 2 * 1024 * 1024;

/// The wall time one render may take, however its instructions are spent.
pub const RENDER_TIME: Duration = Duration::from_secs(1);
