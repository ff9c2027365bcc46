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
miniwob_task!(
    /// MiniWoB++ `click-button`: Click the button the query names.
    MiniwobClickButton,
    MiniwobClickButton,
    "click-button"
);
miniwob_task!(
    /// MiniWoB++ `click-link`: Click the link (a span in a paragraph) whose text the query quotes.
    MiniwobClickLink,
    MiniwobClickLink,
    "click-link"
);
miniwob_task!(
    /// MiniWoB++ `click-checkboxes`: Check exactly the boxes the query names, then press Submit.
    MiniwobClickCheckboxes,
    MiniwobClickCheckboxes,
    "click-checkboxes"
);
miniwob_task!(
    /// MiniWoB++ `focus-text`: Focus the text box (it moves with the seed).
    MiniwobFocusText,
    MiniwobFocusText,
    "focus-text"
);
miniwob_task!(
    /// MiniWoB++ `login-user-popup`: `login-user` with a session popup that MiniWoB raises on focusing a field on about half the seeds (its OK button fails the episode, Cancel dismisses it).
    MiniwobLoginUserPopup,
    MiniwobLoginUserPopup,
    "login-user-popup"
);
miniwob_task!(
    /// MiniWoB++ `choose-list`: Choose the named item of a native `<select>` and press Submit.
    MiniwobChooseList,
    MiniwobChooseList,
    "choose-list"
);
miniwob_task!(
    /// MiniWoB++ `use-autocomplete`: Enter a country that starts (and maybe ends) with the given letters, through a jQuery UI autocomplete, and press Submit.
    MiniwobUseAutocomplete,
    MiniwobUseAutocomplete,
    "use-autocomplete"
);
miniwob_task!(
    /// MiniWoB++ `navigate-tree`: Open folders of a collapsed file tree and click the named file or folder.
    MiniwobNavigateTree,
    MiniwobNavigateTree,
    "navigate-tree"
);
miniwob_task!(
    /// MiniWoB++ `click-widget`: Click a widget of the named kind (radio, checkbox, text, textarea, button).
    MiniwobClickWidget,
    MiniwobClickWidget,
    "click-widget"
);
miniwob_task!(
    /// MiniWoB++ `search-engine`: Search for the quoted name with the Search button and click the n-th result (which may be on page 2 or 3).
    MiniwobSearchEngine,
    MiniwobSearchEngine,
    "search-engine"
);
miniwob_task!(
    /// MiniWoB++ `click-collapsible`: Expand a jQuery UI accordion section and press Submit.
    MiniwobClickCollapsible,
    MiniwobClickCollapsible,
    "click-collapsible"
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
            TaskKind::MiniwobClickButton => Some("click-button"),
            TaskKind::MiniwobClickLink => Some("click-link"),
            TaskKind::MiniwobClickCheckboxes => Some("click-checkboxes"),
            TaskKind::MiniwobFocusText => Some("focus-text"),
            TaskKind::MiniwobLoginUserPopup => Some("login-user-popup"),
            TaskKind::MiniwobChooseList => Some("choose-list"),
            TaskKind::MiniwobUseAutocomplete => Some("use-autocomplete"),
            TaskKind::MiniwobNavigateTree => Some("navigate-tree"),
            TaskKind::MiniwobClickWidget => Some("click-widget"),
            TaskKind::MiniwobSearchEngine => Some("search-engine"),
            TaskKind::MiniwobClickCollapsible => Some("click-collapsible"),
            TaskKind::Search
            | TaskKind::Grid
            | TaskKind::Frame
            | TaskKind::Chart
            | TaskKind::Form
            | TaskKind::Select => None,
        }
    }
}
