//! The built-in policies: the four reference ones, from most trusting to most specific,
//! and `state`, the generic policy extended to effects that leave the DOM alone.
//!
//! One file per policy; `outcome`'s per-task checks for faultline's own tasks are in
//! `outcome.rs`, the MiniWoB++ suite's in `miniwob.rs`.

mod generic;
mod miniwob;
mod outcome;
mod pixel;
mod unverified;

pub use generic::{GenericPolicy, StatePolicy};
pub use outcome::OutcomePolicy;
pub use pixel::PixelPolicy;
pub use unverified::UnverifiedPolicy;

#[cfg(test)]
mod tests;
