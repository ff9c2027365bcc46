//! The catalogue: every fault faultline can inject, with what it is, where it acts, how
//! it is injected, what it leaves as a witness and what the ledger will say.

use faultline_tasks::TaskKind;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A stage of the agent's action round trip.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Parse,
    Execute,
    Feedback,
    Observe,
}

impl Stage {
    pub const ALL: [Stage; 4] = [
        Stage::Parse,
        Stage::Execute,
        Stage::Feedback,
        Stage::Observe,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Stage::Parse => "parse",
            Stage::Execute => "execute",
            Stage::Feedback => "feedback",
            Stage::Observe => "observe",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The ten layers of the anomaly catalogue, from the wire up to the agent's own claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layer {
    /// Bytes on the wire: delays, dropped connections, hangs.
    Transport,
    /// HTTP status codes: server errors, rate limits, expired sessions.
    Http,
    /// Subresources: scripts, stylesheets, images.
    Resource,
    /// Things drawn over the page: banners, modals, popups.
    Overlay,
    /// Geometry: moves, reorders, viewport changes.
    Layout,
    /// Document structure: re-renders, duplicates, shadow roots, virtualization.
    Dom,
    /// Input reaching (or not reaching) the page's handlers.
    Execution,
    /// What the page means: labels, toasts, injected instructions, locales.
    Semantic,
    /// The harness's own tool: parsing, messages, captures, error handling.
    Tool,
    /// The agent's own claims about what it did and saw.
    SelfReport,
}

impl Layer {
    pub const ALL: [Layer; 10] = [
        Layer::Transport,
        Layer::Http,
        Layer::Resource,
        Layer::Overlay,
        Layer::Layout,
        Layer::Dom,
        Layer::Execution,
        Layer::Semantic,
        Layer::Tool,
        Layer::SelfReport,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Layer::Transport => "transport",
            Layer::Http => "http",
            Layer::Resource => "resource",
            Layer::Overlay => "overlay",
            Layer::Layout => "layout",
            Layer::Dom => "dom",
            Layer::Execution => "execution",
            Layer::Semantic => "semantic",
            Layer::Tool => "tool",
            Layer::SelfReport => "self_report",
        }
    }

    /// The layer's position in report order.
    pub fn rank(self) -> usize {
        Layer::ALL
            .iter()
            .position(|l| *l == self)
            .expect("every layer is in ALL")
    }
}

impl fmt::Display for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Layer {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Layer::ALL
            .into_iter()
            .find(|l| l.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Layer::ALL.iter().map(|l| l.name()).collect();
                format!(
                    "unknown layer `{s}` (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

/// Where a fault is injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mechanism {
    /// Middleware in the fixture server: real status codes, delays, dropped connections.
    Network,
    /// The page itself: injected markup and scripts rendered by the fixture server.
    Page,
    /// The browser, through CDP (e.g. the viewport changed behind the harness's back).
    Browser,
    /// A hook in the harness's own round trip (parse, execute, feedback, observe).
    Harness,
    /// The agent's reply, rewritten before the parse stage.
    Agent,
}

impl Mechanism {
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::Network => "network",
            Mechanism::Page => "page",
            Mechanism::Browser => "browser",
            Mechanism::Harness => "harness",
            Mechanism::Agent => "agent",
        }
    }
}

impl fmt::Display for Mechanism {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything the catalogue says about one fault.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FaultSpec {
    /// Stable id, `layer.name` (the four reference stage faults keep their `stage.name`
    /// ids from the design brief, e.g. `parse.token_leak`).
    pub id: &'static str,
    pub layer: Layer,
    /// The round-trip stage where its effect enters.
    pub stage: Stage,
    pub mechanism: Mechanism,
    /// The tasks whose pages and decisions it applies to.
    pub tasks: &'static [TaskKind],
    /// One line: what goes wrong.
    pub description: &'static str,
    /// How it is injected, concretely.
    pub injection: &'static str,
    /// What it draws from the trial seed.
    pub parameters: &'static str,
    /// What its witness records.
    pub witness: &'static str,
    /// What the ledger says when it fires.
    pub implies: &'static str,
    /// When it can fail to fire, and what that means.
    pub not_fired_when: &'static str,
}

macro_rules! faults {
    ($( $(#[$doc:meta])* $variant:ident = $spec:expr, )*) => {
        /// Every fault in the catalogue.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Fault {
            $( $(#[$doc])* $variant, )*
        }

        impl Fault {
            /// The whole catalogue, in report order (layer, then catalogue order).
            pub const ALL: &'static [Fault] = &[$(Fault::$variant,)*];

            /// The catalogue entry.
            pub fn spec(self) -> &'static FaultSpec {
                match self {
                    $( Fault::$variant => {
                        const SPEC: FaultSpec = $spec;
                        &SPEC
                    } )*
                }
            }
        }
    };
}

use Mechanism as M;
use TaskKind as T;

faults! {
    /// A chat end-of-message token is not stripped and ends up in the typed text.
    TokenLeak = FaultSpec {
        id: "parse.token_leak",
        layer: Layer::Tool,
        stage: Stage::Parse,
        mechanism: M::Harness,
        tasks: &[T::Search],
        description: "an end-of-message token (<|im_end|>) leaks into the text the action types",
        injection: "the parse stage skips stripping chat special tokens and appends the token to the first typed text",
        parameters: "none",
        witness: "the typed text before and after",
        implies: "the server receives the query with the token: not the requested record",
        not_fired_when: "the reply types no text",
    },
    /// Screenshot-to-viewport scaling is skipped: image points are used as viewport points.
    UnscaledCoordinates = FaultSpec {
        id: "execute.unscaled_coordinates",
        layer: Layer::Execution,
        stage: Stage::Execute,
        mechanism: M::Harness,
        tasks: &[T::Grid],
        description: "screenshot-to-viewport scaling is skipped: a point in the 900x600 image lands at 3/4 of its 1200x800 target",
        injection: "the execute stage dispatches the image point as a viewport point",
        parameters: "none",
        witness: "the image point, the intended viewport point and the executed one",
        implies: "the click lands on another item or on blank space; the target is not selected",
        not_fired_when: "the image and the viewport have the same size (there is nothing to scale)",
    },
    /// A click that landed inside an iframe is reported as "No change detected."
    IframeNoChange = FaultSpec {
        id: "feedback.iframe_no_change",
        layer: Layer::Tool,
        stage: Stage::Feedback,
        mechanism: M::Harness,
        tasks: &[T::Frame],
        description: "a click that worked inside an iframe is reported as \"No change detected.\"",
        injection: "the feedback stage replaces the tool message when its own hit test says the click went into an <iframe>",
        parameters: "none",
        witness: "the honest message and the reported one",
        implies: "the row is selected: the outcome happened and the tool message lies",
        not_fired_when: "the click did not land on an iframe",
    },
    /// The screenshot is captured right after a hover, before the tooltip appears.
    CaptureBeforeTooltip = FaultSpec {
        id: "observe.capture_before_tooltip",
        layer: Layer::Tool,
        stage: Stage::Observe,
        mechanism: M::Harness,
        tasks: &[T::Chart],
        description: "the screenshot is captured before a hover tooltip has appeared",
        injection: "the observe stage skips the settle wait after a hover",
        parameters: "none",
        witness: "the page-clock instants of the hover, the capture and the tooltip",
        implies: "the observation does not show the value: the answer was never observed",
        not_fired_when: "the capture still began after the tooltip appeared (a very slow machine)",
    },
}

impl Fault {
    /// The four reference stage faults of the design brief, one per stage.
    pub const STAGE: [Fault; 4] = [
        Fault::TokenLeak,
        Fault::UnscaledCoordinates,
        Fault::IframeNoChange,
        Fault::CaptureBeforeTooltip,
    ];

    pub fn id(self) -> &'static str {
        self.spec().id
    }

    pub fn layer(self) -> Layer {
        self.spec().layer
    }

    pub fn stage(self) -> Stage {
        self.spec().stage
    }

    pub fn mechanism(self) -> Mechanism {
        self.spec().mechanism
    }

    pub fn description(self) -> &'static str {
        self.spec().description
    }

    pub fn tasks(self) -> &'static [TaskKind] {
        self.spec().tasks
    }

    pub fn applies_to(self, task: TaskKind) -> bool {
        self.tasks().contains(&task)
    }

    /// The reference stage fault a task's faulty trials use in the default experiment.
    pub fn reference_for(task: TaskKind) -> Option<Fault> {
        Fault::STAGE.into_iter().find(|f| f.applies_to(task))
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.id())
    }
}

impl FromStr for Fault {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Fault::ALL
            .iter()
            .copied()
            .find(|f| f.id() == s)
            .ok_or_else(|| crate::select::unknown_fault_message(s))
    }
}

impl Serialize for Fault {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.id())
    }
}

impl<'de> Deserialize<'de> for Fault {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn ids_are_unique_stable_and_round_trip() {
        let ids: BTreeSet<&str> = Fault::ALL.iter().map(|f| f.id()).collect();
        assert_eq!(ids.len(), Fault::ALL.len(), "duplicate ids");
        for f in Fault::ALL {
            assert_eq!(f.id().parse::<Fault>().unwrap(), *f);
            assert_eq!(serde_json::to_string(f).unwrap(), format!("\"{}\"", f.id()));
            let (prefix, name) = f.id().split_once('.').expect("ids are prefix.name");
            assert!(!name.is_empty() && !name.contains('.'), "{}", f.id());
            if Fault::STAGE.contains(f) {
                assert_eq!(prefix, f.stage().name(), "{}", f.id());
            } else {
                assert_eq!(prefix, f.layer().name(), "{}", f.id());
            }
            assert!(!f.tasks().is_empty(), "{} applies to no task", f.id());
            let s = f.spec();
            for text in [
                s.description,
                s.injection,
                s.parameters,
                s.witness,
                s.implies,
                s.not_fired_when,
            ] {
                assert!(!text.is_empty(), "{} has an empty field", f.id());
            }
        }
        assert!("parse.nope".parse::<Fault>().is_err());
    }

    #[test]
    fn every_task_has_one_reference_stage_fault() {
        for task in TaskKind::ALL {
            let f = Fault::reference_for(task).unwrap();
            assert!(Fault::STAGE.contains(&f));
        }
        let stages: BTreeSet<Stage> = Fault::STAGE.iter().map(|f| f.stage()).collect();
        assert_eq!(stages.len(), 4, "one reference fault per stage");
    }

    #[test]
    fn layers_parse_by_name() {
        for l in Layer::ALL {
            assert_eq!(l.name().parse::<Layer>().unwrap(), l);
        }
        assert!("transprt".parse::<Layer>().is_err());
    }
}
