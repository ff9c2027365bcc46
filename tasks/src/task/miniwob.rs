//! MiniWoB++ tasks: pages nobody here wrote, scored by an answer key nobody here wrote.
//!
//! Each MiniWoB++ task page draws its own problem in JavaScript from `Math.random`, and
//! computes its own reward when the episode ends. A faultline layout of such a task is
//! therefore only the episode seed: the page seeds MiniWoB's `seedrandom` with it
//! (as the string `"<seed>\0"`, which is how seedrandom keys a number; a bare digit
//! string would be a repeating key, so `"1"`, `"11"` and `"111"` would draw the same
//! problem) and MiniWoB draws the rest. The problem itself (which tab, which name to
//! type) is not known here: the page shows it in its `#query` box, which is what an
//! agent and a verification policy read.
//!
//! The instruction faultline hands out names the MiniWoB task and points at the page's
//! own instruction; its quoted target is the MiniWoB task name, and the expectation
//! ([`Expectation::MiniwobQuery`]) says "what the page's `#query` asks must hold".

use super::{LayoutRng, LayoutSpec, Task, TaskKind};
use crate::expectation::Expectation;
use crate::geometry::Rect;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// The MiniWoB++ task area: `#wrap` is 160x210 CSS px at the top-left corner of the
/// page. Page-side faults aim at it.
pub const MINIWOB_AREA: Rect = Rect {
    x: 0.0,
    y: 0.0,
    width: 160.0,
    height: 210.0,
};

/// One MiniWoB++ task as a faultline task: a layout is the episode seed.
macro_rules! miniwob_task {
    ($(#[$meta:meta])* $ty:ident, $kind:ident, $name:literal) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
        pub struct $ty {
            /// The seed MiniWoB's `seedrandom` draws this episode from.
            pub episode_seed: u64,
        }

        impl Task for $ty {
            const KIND: TaskKind = TaskKind::$kind;

            fn generate(rng: &mut LayoutRng, _index: u32) -> Self {
                $ty {
                    episode_seed: rng.random(),
                }
            }

            fn target(&self) -> &str {
                $name
            }

            fn instruction(&self) -> String {
                miniwob_instruction($name)
            }

            fn expectation(named: String) -> Expectation {
                Expectation::MiniwobQuery { task: named }
            }

            fn target_rect(&self) -> Option<Rect> {
                Some(MINIWOB_AREA)
            }

            fn into_spec(self) -> LayoutSpec {
                LayoutSpec::$kind(self)
            }
        }
    };
}

/// The instruction of every MiniWoB++ task: its name, and where its problem is stated.
fn miniwob_instruction(name: &str) -> String {
    format!(
        "Complete the MiniWoB++ task \"{name}\": do what the yellow box at the top of the page asks."
    )
}

miniwob_task!(
    /// MiniWoB++ `click-tab`: click the jQuery UI tab the query names.
    MiniwobClickTab,
    MiniwobClickTab,
    "click-tab"
);
miniwob_task!(
    /// MiniWoB++ `click-dialog`: close a jQuery UI dialog with its "x".
    MiniwobClickDialog,
    MiniwobClickDialog,
    "click-dialog"
);
miniwob_task!(
    /// MiniWoB++ `enter-text`: type the quoted name into the field and press Submit.
    MiniwobEnterText,
    MiniwobEnterText,
    "enter-text"
);
miniwob_task!(
    /// MiniWoB++ `login-user`: type the quoted username and password and press Login.
    MiniwobLoginUser,
    MiniwobLoginUser,
    "login-user"
);

impl TaskKind {
    /// The MiniWoB++ task name of a MiniWoB++ kind (`click-tab`), `None` for faultline's
    /// own tasks.
    pub fn miniwob_name(self) -> Option<&'static str> {
        match self {
            TaskKind::MiniwobClickTab => Some("click-tab"),
            TaskKind::MiniwobClickDialog => Some("click-dialog"),
            TaskKind::MiniwobEnterText => Some("enter-text"),
            TaskKind::MiniwobLoginUser => Some("login-user"),
            TaskKind::Search
            | TaskKind::Grid
            | TaskKind::Frame
            | TaskKind::Chart
            | TaskKind::Form
            | TaskKind::Select => None,
        }
    }
}
