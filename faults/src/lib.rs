//! faultline's fault catalogue.
//!
//! A fault breaks the agent's action round trip on purpose. The catalogue
//! ([`Fault::ALL`], each with its [`FaultSpec`]) covers the four reference stage faults of
//! the design brief and the ten-layer anomaly catalogue ([`Layer`]): every entry has a
//! stable id, its layer, the stage where its effect enters, its injection
//! [`Mechanism`], the tasks it applies to, the parameters it draws from the trial seed,
//! the witness it leaves and the ledger truth it implies.
//!
//! | stage    | what it does                     | reference fault |
//! |----------|----------------------------------|-----------------|
//! | parse    | reply text -> typed actions      | [`Fault::TokenLeak`] |
//! | execute  | action -> browser input events   | [`Fault::UnscaledCoordinates`] |
//! | feedback | what the tool reports back       | [`Fault::IframeNoChange`] |
//! | observe  | what the model sees next         | [`Fault::CaptureBeforeTooltip`] |
//!
//! The catalogue lives in `catalogue/`: its vocabulary, the `faults!` table with each
//! layer's entries in a file of its own, and what a fault is read off its entry; see that
//! module's docs for the rooms and why the table is one list.
//!
//! A fault is armed for one trial as a [`FaultPlan`] (the fault plus the trial seed). The
//! harness calls the plan's hooks at every point of the round trip; each hook is a pure
//! transformation with a no-op default, and an application that changed something
//! returns a [`Witness`]. No witness means the fault did not fire, and such a trial is
//! stored as `fired = false` and excluded from detection counts: a fault that did
//! nothing can be neither caught nor missed.
//!
//! Faults never look at the ledger: whether one *fired* is decided from what the fault
//! layer itself did (the text it typed, the point it clicked, the message it sent, the
//! instant it captured, the status it served), not from what the page recorded.

#![warn(missing_docs)]
#![warn(unreachable_pub)]

mod catalogue;
mod plan;
pub mod select;
pub mod site;
mod suggest;
mod witness;

pub use catalogue::{Fault, FaultSpec, Layer, Mechanism, Source, Stage};
pub use plan::{
    target_rect, BeforeAct, FaultPlan, FeedbackContext, Misread, FALSE_CLAIM, LEAKED_TOKEN,
    NO_CHANGE_MESSAGE, RESULTS_MARKER,
};
pub use select::select;
pub use witness::{UnscaledClickWitness, Witness};
