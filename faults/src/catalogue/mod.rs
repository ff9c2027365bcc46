//! The catalogue: every fault faultline can inject, with what it is, where it acts, how
//! it is injected, what it leaves as a witness and what the ledger will say.
//!
//! | room | what it holds |
//! |------|---------------|
//! | `vocabulary.rs` | [`Layer`], [`Stage`], [`Mechanism`], [`Source`] and [`FaultSpec`], the words an entry is written in |
//! | `table/` | the `faults!` table making [`Fault`] (`mod.rs`), and the entries, one file per layer (`transport.rs`, `http.rs`, ...; the four reference stage faults in `stage.rs`) |
//! | `accessors.rs` | what a fault is, read off its entry ([`Fault::layer`], [`Fault::tasks`], ...), [`Fault::STAGE`] and the MiniWoB++ applicability |
//! | `names.rs` | a fault by its id: display, parsing, serde and close-match suggestions |

mod accessors;
mod names;
mod table;
#[cfg(test)]
mod tests;
mod vocabulary;

pub(crate) use names::suggestions;
pub use table::Fault;
pub use vocabulary::{FaultSpec, Layer, Mechanism, Source, Stage};
