//! faultline's vocabulary: the things every other crate talks about.
//!
//! - [`task`]: what a task is ([`task::Task`]), the list of tasks ([`TaskKind`]) and one
//!   file per task with its layout, instruction and expectation; its module
//!   documentation says which piece of a task lives in which crate.
//! - [`Layout`]: a task in one seeded arrangement. A layout is a pure function of
//!   `(task, layout seed)`, so the fixture server, the oracle recorder and scoring all
//!   regenerate the same page from two numbers.
//! - [`Instruction`] and [`Expectation`]: what the agent is asked, in public words. The
//!   outcome policy derives its expectation from the instruction text, never from the
//!   layout or the ledger.
//! - [`Action`] and [`parse_reply`]: the reply grammar shared by recorded decisions and
//!   live agents.
//! - [`formats`]: other agents' reply formats (Anthropic and OpenAI computer use,
//!   BrowserGym, UI-TARS, Qwen-VL) converted into actions, with the [`CoordinateSpace`]
//!   the model saw.
//! - [`Decision`] and [`DecisionSet`]: recorded replies, stored as JSONL.
//! - [`Condition`], [`Verdict`] and [`StopReason`]: what a trial or an episode came to,
//!   as the harness stores it and the analysis reads it back.
//! - [`Phase`] and [`InfraKind`]: a run's phases, and what infrastructure failure
//!   interrupted an item, as stored by name.
//! - [`seed`]: one root seed, every other seed derived from it by name.
//! - [`named_enum!`]: the one definition of a simple enum's stable names.

#![warn(missing_docs)]
#![warn(unreachable_pub)]

pub mod action;
pub mod decision;
pub mod expectation;
pub mod formats;
pub mod geometry;
pub mod instruction;
pub mod layout;
mod named;
pub mod outcome;
pub mod run;
pub mod seed;
pub mod task;

pub use action::{parse_reply, Action, ParseError};
pub use decision::{Decision, DecisionError, DecisionSet};
pub use expectation::Expectation;
pub use formats::{ActionFormat, Converted, CoordinateSpace, FormatError};
pub use geometry::{Point, Rect, Size};
pub use instruction::Instruction;
pub use layout::{ChartLayout, FrameLayout, GridItem, GridLayout, Layout, SearchLayout};
pub use outcome::{Condition, StopReason, Verdict};
pub use run::{InfraErrorKind, InfraKind, Phase, PluginFailure};
pub use task::{MiniwobTask, Task, TaskKind};
