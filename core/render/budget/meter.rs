//! The writer a render writes through: it refuses a byte past [`MAX_PAGE_BYTES`] or a write
//! past [`RENDER_TIME`], and says which bound was met.

use std::cell::Cell;
use std::io;
use std::time::Instant;

use super::{FUEL, MAX_PAGE_BYTES, RENDER_TIME};

/// Where a render writes: refuses a byte past [`MAX_PAGE_BYTES`] or a write past the deadline,
/// noting which (`exceeded`) so the render's error can say so.
pub struct Budgeted<'a> {
    pub out: Vec<u8>,
    deadline: Instant,
    /// Writes left before the clock is read again.
    unclocked: u32,
    exceeded: &'a Cell<Option<Exceeded>>,
}

/// How many writes go between two readings of the clock: a page is written in hundreds of small
/// pieces, and reading the clock at each was ~2% of a first visit. Fuel bounds the work between
/// two writes, so a render past its deadline stops within this many writes.
pub const WRITES_PER_CLOCK: u32 = 32;

/// Which bound a render ran into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exceeded {
    /// [`FUEL`].
    Instructions,
    /// [`MAX_PAGE_BYTES`].
    Size,
    /// [`RENDER_TIME`].
    Time,
}

impl Exceeded {
    pub fn reason(self) -> String {
        match self {
            Self::Instructions => {
                format!("the page takes more than the {FUEL} steps a render may take")
            }
            Self::Size => format!(
                "the page is larger than the {} MiB a page may be",
                MAX_PAGE_BYTES / (1024 * 1024)
            ),
            Self::Time => format!(
                "the page takes longer than the {} ms a render may take",
                RENDER_TIME.as_millis()
            ),
        }
    }
}

impl<'a> Budgeted<'a> {
    pub fn new(exceeded: &'a Cell<Option<Exceeded>>) -> Self {
        Self {
            out: Vec::with_capacity(16 * 1024),
            deadline: Instant::now() + RENDER_TIME,
            unclocked: WRITES_PER_CLOCK,
            exceeded,
        }
    }
}

impl io::Write for Budgeted<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.out.len() + buf.len() > MAX_PAGE_BYTES {
            self.exceeded.set(Some(Exceeded::Size));
            return Err(io::Error::other("page too large"));
        }
        self.unclocked -= 1;
        if self.unclocked == 0 {
            self.unclocked = WRITES_PER_CLOCK;
            if Instant::now() > self.deadline {
                self.exceeded.set(Some(Exceeded::Time));
                return Err(io::Error::other("render too slow"));
            }
        }
        self.out.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn a_render_past_its_deadline_stops_within_a_round_of_writes() {
        use std::io::Write;
        let exceeded = Cell::new(None);
        let mut out = Budgeted::new(&exceeded);
        out.write_all(b"on time").unwrap();
        out.deadline = Instant::now() - Duration::from_millis(1);
        let written = (0..=WRITES_PER_CLOCK).take_while(|_| out.write(b"x").is_ok());
        assert!(written.count() < WRITES_PER_CLOCK as usize);
        assert_eq!(exceeded.get(), Some(Exceeded::Time));
    }

    #[test]
    fn a_page_past_its_size_is_refused_at_once() {
        use std::io::Write;
        let exceeded = Cell::new(None);
        let mut out = Budgeted::new(&exceeded);
        out.write_all(&vec![b'x'; MAX_PAGE_BYTES]).unwrap();
        assert!(out.write(b"x").is_err());
        assert_eq!(exceeded.get(), Some(Exceeded::Size));
    }
}
