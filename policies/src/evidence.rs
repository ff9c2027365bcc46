//! What a policy is allowed to see.

use faultline_tasks::{Action, Instruction, Size};
use serde::{Deserialize, Serialize};

/// What the model sees: a screenshot at the model's image size and the visible text of
/// every frame, captured at the same instant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Observation {
    /// PNG bytes at `size`.
    #[serde(skip)]
    pub png: Vec<u8>,
    pub size: Size,
    /// Visible text of the top document followed by each child frame's.
    pub text: String,
}

/// A form control as read through the DOM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Control {
    pub tag: String,
    pub kind: String,
    pub name: String,
    pub label: String,
    pub value: String,
}

/// One frame's DOM, read through CDP in that frame's execution context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameSnapshot {
    pub url: String,
    pub is_top: bool,
    /// SHA-256 of the serialized document, to detect any DOM change cheaply.
    pub dom_digest: String,
    /// Visible text (`innerText` of the body).
    pub text: String,
    pub controls: Vec<Control>,
    /// Accessible names of elements marked selected/pressed/checked.
    pub selected: Vec<String>,
}

/// The page across all its frames.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PageState {
    pub url: String,
    pub frames: Vec<FrameSnapshot>,
}

impl PageState {
    pub fn top(&self) -> Option<&FrameSnapshot> {
        self.frames.iter().find(|f| f.is_top)
    }

    pub fn children(&self) -> impl Iterator<Item = &FrameSnapshot> {
        self.frames.iter().filter(|f| !f.is_top)
    }
}

/// Everything a policy may use to judge one action.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    pub instruction: &'a Instruction,
    /// The actions the harness dispatched (after the parse stage).
    pub actions: &'a [Action],
    /// The tool's own report of what it did.
    pub tool_message: &'a str,
    pub before: &'a Observation,
    pub after: &'a Observation,
    pub before_state: &'a PageState,
    pub after_state: &'a PageState,
}
