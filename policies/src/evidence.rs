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
    /// The screenshot's size, in image pixels (the model's image size, not the viewport's).
    pub size: Size,
    /// Visible text of the top document followed by each child frame's.
    pub text: String,
}

/// A form control as read through the DOM.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Control {
    /// The element's tag name, lowercase (`input`, `textarea` or `select`).
    pub tag: String,
    /// The control's `type`, lowercase (e.g. `text`, `checkbox`, `select-one`).
    pub kind: String,
    /// The control's `name`, else its `id`, else empty.
    pub name: String,
    /// The text of its first `<label>`, else its `aria-label`, else empty.
    pub label: String,
    /// Its current value.
    pub value: String,
    /// Whether a checkbox or radio button is checked (`false` for other controls).
    #[serde(default)]
    pub checked: bool,
}

/// One frame's DOM, read through CDP in that frame's execution context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FrameSnapshot {
    /// The frame's document URL.
    pub url: String,
    /// Whether this is the top-level document (not a child frame).
    pub is_top: bool,
    /// SHA-256 of the serialized document, to detect any DOM change cheaply.
    pub dom_digest: String,
    /// Visible text (`innerText` of the body).
    pub text: String,
    /// The frame's visible form controls (hidden inputs left out).
    pub controls: Vec<Control>,
    /// Accessible names of elements marked selected/pressed/checked.
    pub selected: Vec<String>,
    /// The frame's focused element (`document.activeElement`), described as
    /// `tag#id`, `tag[name=...]` or `tag`; empty when the body (or nothing) has focus.
    #[serde(default)]
    pub focus: String,
    /// The frame's scroll offsets that are not zero: the window's (target `window`)
    /// and every scrolled element's, in document order.
    #[serde(default)]
    pub scroll: Vec<ScrollOffset>,
    /// The frame's selected text: the document selection, or the selected part of the
    /// focused text field's value; empty when nothing is selected.
    #[serde(default)]
    pub selection: String,
}

/// One scrolled thing of a frame and how far it is scrolled.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScrollOffset {
    /// `window`, or the scrolled element described as [`FrameSnapshot::focus`] is.
    pub target: String,
    /// Horizontal offset, in whole CSS pixels.
    pub x: i64,
    /// Vertical offset, in whole CSS pixels.
    pub y: i64,
}

/// The page across all its frames.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct PageState {
    /// The top document's URL.
    pub url: String,
    /// Every frame's snapshot: the top document's and each child frame's.
    pub frames: Vec<FrameSnapshot>,
}

impl PageState {
    /// The top document's snapshot, if one was read.
    pub fn top(&self) -> Option<&FrameSnapshot> {
        self.frames.iter().find(|f| f.is_top)
    }

    /// The snapshots of the child frames (every frame but the top one).
    pub fn children(&self) -> impl Iterator<Item = &FrameSnapshot> {
        self.frames.iter().filter(|f| !f.is_top)
    }

    /// Whether `other` shows the same content: the URL and every frame's markup, text,
    /// controls and selected names. Focus, scroll offsets and the selection are left
    /// aside: a change of those alone is what the `state` policy looks for, and no other
    /// check counts it as a change of the page.
    pub fn same_content(&self, other: &PageState) -> bool {
        let content = |f: &FrameSnapshot| {
            (
                f.url.clone(),
                f.is_top,
                f.dom_digest.clone(),
                f.text.clone(),
                f.controls.clone(),
                f.selected.clone(),
            )
        };
        self.url == other.url
            && self.frames.len() == other.frames.len()
            && self
                .frames
                .iter()
                .zip(&other.frames)
                .all(|(a, b)| content(a) == content(b))
    }
}

/// Everything a policy may use to judge one action.
#[derive(Debug, Clone, Copy)]
pub struct Evidence<'a> {
    /// The task's instruction, as the agent was given it.
    pub instruction: &'a Instruction,
    /// The actions the harness dispatched (after the parse stage).
    pub actions: &'a [Action],
    /// The tool's own report of what it did.
    pub tool_message: &'a str,
    /// The observation before the actions were dispatched.
    pub before: &'a Observation,
    /// The observation after the actions were dispatched.
    pub after: &'a Observation,
    /// The page's DOM state before the actions were dispatched.
    pub before_state: &'a PageState,
    /// The page's DOM state after the actions were dispatched.
    pub after_state: &'a PageState,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(digest: &str) -> FrameSnapshot {
        FrameSnapshot {
            url: "http://127.0.0.1/p".into(),
            is_top: true,
            dom_digest: digest.into(),
            text: "t".into(),
            controls: vec![],
            selected: vec![],
            focus: String::new(),
            scroll: vec![],
            selection: String::new(),
        }
    }

    fn page(f: FrameSnapshot) -> PageState {
        PageState {
            url: "http://127.0.0.1/p".into(),
            frames: vec![f],
        }
    }

    #[test]
    fn regression_focus_scroll_and_selection_alone_are_not_a_content_change() {
        let before = page(frame("a"));
        let mut moved = frame("a");
        moved.focus = "input#q".into();
        moved.scroll = vec![ScrollOffset {
            target: "window".into(),
            x: 0,
            y: 40,
        }];
        moved.selection = "word".into();
        let moved = page(moved);
        assert_ne!(before, moved);
        assert!(before.same_content(&moved));
        assert!(!before.same_content(&page(frame("b"))));
        let mut more = page(frame("a"));
        more.frames.push(frame("a"));
        assert!(!before.same_content(&more));
    }
}
