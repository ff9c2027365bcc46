//! faultline's vocabulary: the things every other crate talks about.
//!
//! - [`TaskKind`] and [`Layout`]: the four reference tasks and their seeded arrangements.
//!   A layout is a pure function of `(task, layout seed)`, so the fixture server, the
//!   oracle recorder and scoring all regenerate the same page from two numbers.
//! - [`Instruction`] and [`Expectation`]: what the agent is asked, in public words. The
//!   outcome policy derives its expectation from the instruction text, never from the
//!   layout or the ledger.
//! - [`Action`] and [`parse_reply`]: the reply grammar shared by recorded decisions and
//!   live agents.
//! - [`formats`]: other agents' reply formats (Anthropic and OpenAI computer use,
//!   BrowserGym, UI-TARS, Qwen-VL) converted into actions, with the [`CoordinateSpace`]
//!   the model saw.
//! - [`Decision`] and [`DecisionSet`]: recorded replies, stored as JSONL.
//! - [`seed`]: one root seed, every other seed derived from it by name.

pub mod action;
pub mod decision;
pub mod formats;
pub mod geometry;
pub mod instruction;
pub mod layout;
pub mod seed;

pub use action::{parse_reply, Action, ParseError};
pub use decision::{Decision, DecisionError, DecisionSet};
pub use formats::{ActionFormat, Converted, CoordinateSpace, FormatError};
pub use geometry::{Point, Rect, Size};
pub use instruction::{Expectation, Instruction};
pub use layout::{ChartLayout, FrameLayout, GridItem, GridLayout, Layout, SearchLayout, TaskKind};
