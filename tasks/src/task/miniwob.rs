//! MiniWoB++ tasks: pages nobody here wrote, scored by an answer key nobody here wrote.
//!
//! The suite is one family of tasks ([`TaskKind::Miniwob`]); [`MiniwobTask`] lists its
//! members once, one line each: the MiniWoB++ name, the stored name of its task kind,
//! and the properties the fault catalogue selects on ([`MiniwobTask::types_text`],
//! [`MiniwobTask::plan_waits`]). Every other piece of a suite task is shared by the
//! family (the layout, the instruction, the expectation and the target box here; the
//! page and the truth in the fixture sites), except its oracle plan (the fixture sites)
//! and its outcome check (the outcome policy), one per task.
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

use super::{LayoutRng, TaskKind};
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

/// Declares [`MiniwobTask`] from one line per suite task:
/// `Variant = ("suite-name", "stored_kind_name"), types_text: bool, plan_waits: bool;`.
macro_rules! miniwob_tasks {
    ($(
        $(#[$doc:meta])*
        $variant:ident = ($name:literal, $stored:literal),
            types_text: $types:literal, plan_waits: $waits:literal;
    )+) => {
        crate::named_enum! {
            /// A task of the MiniWoB++ suite. Its name ([`MiniwobTask::name`], `Display`,
            /// `FromStr`) is MiniWoB's own (`click-tab`, the page's file name); the stored
            /// name of its task kind is [`MiniwobTask::stored_name`]
            /// (`miniwob_click_tab`). [`MiniwobTask::ALL`] is the suite's report order.
            #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
            pub enum MiniwobTask: "MiniWoB++ task" {
                $( $(#[$doc])* $variant = $name, )+
            }
        }

        impl MiniwobTask {
            /// The stored name of this task's [`TaskKind`] (`miniwob_click_tab`): what
            /// configs, decisions, databases and reports call it.
            pub const fn stored_name(self) -> &'static str {
                match self {
                    $( MiniwobTask::$variant => $stored, )+
                }
            }

            /// Whether the task's decisions type text (a fault on typed text has
            /// something to act on).
            pub const fn types_text(self) -> bool {
                match self {
                    $( MiniwobTask::$variant => $types, )+
                }
            }

            /// Whether the task's oracle plan waits for the page between its steps (for
            /// a menu to be drawn, an animation to end): a fault that skips waits has
            /// something to act on.
            pub const fn plan_waits(self) -> bool {
                match self {
                    $( MiniwobTask::$variant => $waits, )+
                }
            }
        }
    };
}

miniwob_tasks! {
    /// `click-tab`: click the jQuery UI tab the query names.
    ClickTab = ("click-tab", "miniwob_click_tab"), types_text: false, plan_waits: false;
    /// `click-dialog`: close a jQuery UI dialog with its "x".
    ClickDialog = ("click-dialog", "miniwob_click_dialog"), types_text: false, plan_waits: false;
    /// `enter-text`: type the quoted name into the field and press Submit.
    EnterText = ("enter-text", "miniwob_enter_text"), types_text: true, plan_waits: false;
    /// `login-user`: type the quoted username and password and press Login.
    LoginUser = ("login-user", "miniwob_login_user"), types_text: true, plan_waits: false;
    /// `click-button`: Click the button the query names.
    ClickButton = ("click-button", "miniwob_click_button"), types_text: false, plan_waits: false;
    /// `click-link`: Click the link (a span in a paragraph) whose text the query quotes.
    ClickLink = ("click-link", "miniwob_click_link"), types_text: false, plan_waits: false;
    /// `click-checkboxes`: Check exactly the boxes the query names, then press Submit.
    ClickCheckboxes = ("click-checkboxes", "miniwob_click_checkboxes"), types_text: false, plan_waits: false;
    /// `focus-text`: Focus the text box (it moves with the seed).
    FocusText = ("focus-text", "miniwob_focus_text"), types_text: false, plan_waits: false;
    /// `login-user-popup`: `login-user` with a session popup that MiniWoB raises on
    /// focusing a field on about half the seeds (its OK button fails the episode, Cancel
    /// dismisses it).
    LoginUserPopup = ("login-user-popup", "miniwob_login_user_popup"), types_text: true, plan_waits: false;
    /// `choose-list`: Choose the named item of a native `<select>` and press Submit.
    ChooseList = ("choose-list", "miniwob_choose_list"), types_text: false, plan_waits: false;
    /// `use-autocomplete`: Enter a country that starts (and maybe ends) with the given
    /// letters, through a jQuery UI autocomplete, and press Submit.
    UseAutocomplete = ("use-autocomplete", "miniwob_use_autocomplete"), types_text: true, plan_waits: true;
    /// `navigate-tree`: Open folders of a collapsed file tree and click the named file or
    /// folder.
    NavigateTree = ("navigate-tree", "miniwob_navigate_tree"), types_text: false, plan_waits: false;
    /// `click-widget`: Click a widget of the named kind (radio, checkbox, text, textarea,
    /// button).
    ClickWidget = ("click-widget", "miniwob_click_widget"), types_text: false, plan_waits: false;
    /// `search-engine`: Search for the quoted name with the Search button and click the
    /// n-th result (which may be on page 2 or 3).
    SearchEngine = ("search-engine", "miniwob_search_engine"), types_text: true, plan_waits: false;
    /// `click-collapsible`: Expand a jQuery UI accordion section and press Submit.
    ClickCollapsible = ("click-collapsible", "miniwob_click_collapsible"), types_text: false, plan_waits: true;
}

impl MiniwobTask {
    /// The suite task whose stored kind name is `stored` (`miniwob_click_tab`).
    pub fn from_stored_name(stored: &str) -> Option<MiniwobTask> {
        MiniwobTask::ALL
            .into_iter()
            .find(|t| t.stored_name() == stored)
    }
}

/// A layout of a MiniWoB++ task: which task, and the episode seed.
///
/// It serializes as a layout of its task kind always did: the kind's stored name under
/// `task` (the layout's tag), then `episode_seed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MiniwobLayout {
    /// Which suite task.
    #[serde(with = "stored_name")]
    pub task: MiniwobTask,
    /// The seed MiniWoB's `seedrandom` draws this episode from.
    pub episode_seed: u64,
}

impl MiniwobLayout {
    /// Setup: draws the episode seed of a layout of `task`.
    pub(crate) fn generate(task: MiniwobTask, rng: &mut LayoutRng) -> MiniwobLayout {
        MiniwobLayout {
            task,
            episode_seed: rng.random(),
        }
    }

    /// The task this layout belongs to.
    pub fn kind(&self) -> TaskKind {
        TaskKind::Miniwob(self.task)
    }

    /// The quoted target: the MiniWoB++ task name.
    pub fn target(&self) -> &str {
        self.task.name()
    }

    /// The instruction of every MiniWoB++ task: its name, and where its problem is
    /// stated.
    pub fn instruction(&self) -> String {
        format!(
            "Complete the MiniWoB++ task \"{}\": do what the yellow box at the top of the page asks.",
            self.task.name()
        )
    }

    /// What the page's own `#query` asks must hold; `named` is the MiniWoB++ task name.
    pub fn expectation(named: String) -> Expectation {
        Expectation::MiniwobQuery { task: named }
    }

    /// The task area (see [`MINIWOB_AREA`]).
    pub fn target_rect(&self) -> Option<Rect> {
        Some(MINIWOB_AREA)
    }
}

/// A [`MiniwobTask`] as the stored name of its task kind.
mod stored_name {
    use super::MiniwobTask;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(t: &MiniwobTask, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(t.stored_name())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<MiniwobTask, D::Error> {
        let s = std::borrow::Cow::<str>::deserialize(d)?;
        MiniwobTask::from_stored_name(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown MiniWoB++ task kind `{s}`")))
    }
}
