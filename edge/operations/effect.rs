//! What calling an operation does to what exists, written beside each operation in the table
//! ([`super::table`]) and read by MCP as the specification's tool annotations (read-only,
//! destructive, idempotent, open-world). A `GET` must be [`READS`] and nothing else may be:
//! the table checks it when it is built, so a new operation cannot be left unannotated.

/// What one call of an operation does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effect {
    pub change: Change,
    /// It reaches outside lps: fetches leads' websites, asks the model, or sends callbacks.
    pub reaches_outside: bool,
}

/// What a call changes, and whether calling it again with the same arguments changes more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing.
    Reads,
    /// Adds something new each call; loses nothing.
    Adds,
    /// Sets a state that loses nothing (a link, a membership, publishing); a repeat is a no-op.
    Sets,
    /// Overwrites or removes what exists (values, a design, a membership, a record); a repeat
    /// with the same arguments changes nothing more.
    Overwrites,
    /// Overwrites what exists, anew on each call (a new secret, a lead's values merged again).
    Replaces,
}

pub const READS: Effect = Effect::of(Change::Reads);
pub const ADDS: Effect = Effect::of(Change::Adds);
pub const SETS: Effect = Effect::of(Change::Sets);
pub const OVERWRITES: Effect = Effect::of(Change::Overwrites);
pub const REPLACES: Effect = Effect::of(Change::Replaces);

impl Effect {
    const fn of(change: Change) -> Self {
        Self {
            change,
            reaches_outside: false,
        }
    }

    /// The same, reaching outside lps.
    pub const fn reaching_outside(self) -> Self {
        Self {
            reaches_outside: true,
            ..self
        }
    }

    pub fn read_only(&self) -> bool {
        self.change == Change::Reads
    }

    /// Deletes or overwrites what exists, as opposed to only adding.
    pub fn destructive(&self) -> bool {
        matches!(self.change, Change::Overwrites | Change::Replaces)
    }

    /// A repeated call with the same arguments changes nothing more.
    pub fn idempotent(&self) -> bool {
        matches!(
            self.change,
            Change::Reads | Change::Sets | Change::Overwrites
        )
    }
}
