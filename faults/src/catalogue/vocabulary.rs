//! The catalogue's vocabulary: the layers, the round-trip stages and the injection
//! mechanisms a fault is described by, and [`FaultSpec`], the entry itself.

use faultline_tasks::TaskKind;
use serde::{Deserialize, Serialize};

faultline_tasks::named_enum! {
    /// A stage of the agent's action round trip.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Stage: "stage" {
        /// The agent's reply is parsed into actions.
        Parse = "parse",
        /// The parsed actions are dispatched to the browser.
        Execute = "execute",
        /// The tool reports back to the agent what its actions did.
        Feedback = "feedback",
        /// The next observation (the screenshot) is captured.
        Observe = "observe",
    }
}

faultline_tasks::named_enum! {
    /// The ten layers of the anomaly catalogue, from the wire up to the agent's own claims,
    /// in report order ([`Layer::ALL`]).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Layer: "layer" {
        /// Bytes on the wire: delays, dropped connections, hangs.
        Transport = "transport",
        /// HTTP status codes: server errors, rate limits, expired sessions.
        Http = "http",
        /// Subresources: scripts, stylesheets, images.
        Resource = "resource",
        /// Things drawn over the page: banners, modals, popups.
        Overlay = "overlay",
        /// Geometry: moves, reorders, viewport changes.
        Layout = "layout",
        /// Document structure: re-renders, duplicates, shadow roots, virtualization.
        Dom = "dom",
        /// Input reaching (or not reaching) the page's handlers.
        Execution = "execution",
        /// What the page means: labels, toasts, injected instructions, locales.
        Semantic = "semantic",
        /// The harness's own tool: parsing, messages, captures, error handling.
        Tool = "tool",
        /// The agent's own claims about what it did and saw.
        SelfReport = "self_report",
    }
}

impl Layer {
    /// The layer's position in report order.
    pub fn rank(self) -> usize {
        Layer::ALL
            .iter()
            .position(|l| *l == self)
            .expect("every layer is in ALL")
    }
}

faultline_tasks::named_enum! {
    /// Where a fault is injected.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Mechanism: "mechanism" {
        /// Middleware in the fixture server: real status codes, delays, dropped connections.
        Network = "network",
        /// The page itself: injected markup and scripts rendered by the fixture server.
        Page = "page",
        /// The browser, through CDP (e.g. the viewport changed behind the harness's back).
        Browser = "browser",
        /// A hook in the harness's own round trip (parse, execute, feedback, observe).
        Harness = "harness",
        /// The agent's reply, rewritten before the parse stage.
        Agent = "agent",
        /// The DevTools proxy between a driver and its browser: a protocol message
        /// changed, dropped or answered on the way (an external harness's connection, or
        /// faultline's own with `[browser] devtools_proxy = true`).
        Devtools = "devtools",
    }
}

/// Everything the catalogue says about one fault.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FaultSpec {
    /// Stable id, `layer.name` (the four reference stage faults keep their `stage.name`
    /// ids from the design brief, e.g. `parse.token_leak`).
    pub id: &'static str,
    /// The catalogue layer it belongs to.
    pub layer: Layer,
    /// The round-trip stage where its effect enters.
    pub stage: Stage,
    /// Where it is injected: network, page, browser, harness or agent reply.
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
    /// Whether the intended outcome still happens when it fires (the ledger's verdict a
    /// fired trial must get: a policy that then says Success is right).
    pub outcome_holds: bool,
    /// When it can fail to fire, and what that means.
    pub not_fired_when: &'static str,
    /// What it mirrors: the public report, paper or standard it reproduces, the reference
    /// experiment, or why it was designed here without one.
    pub source: Source,
}

/// Where a fault comes from: every entry names one, so a fault cannot join the catalogue
/// without saying what real failure it stands for.
///
/// Serialized (in `faultline list faults --json`) as an object tagged by `kind`, e.g.
/// `{"kind": "report", "title": "...", "url": "https://..."}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    /// A public bug report or pull request showing the failure in a real tool.
    Report {
        /// Where it was filed and its title, e.g. `owner/repo#12: what broke`.
        title: &'static str,
        /// Its address (https).
        url: &'static str,
    },
    /// A paper describing the failure or the attack.
    Paper {
        /// Its title, authors and year.
        title: &'static str,
        /// The part of it the fault mirrors.
        section: &'static str,
    },
    /// A standard defining the behaviour the fault exercises.
    Standard {
        /// The standard, e.g. `RFC 9110 (HTTP Semantics)`.
        name: &'static str,
        /// The section, e.g. `15.6.1 500 Internal Server Error`.
        section: &'static str,
    },
    /// The reference experiment: the four reference stage faults of the design brief,
    /// one per stage of the action round trip.
    ReferenceExperiment {
        /// Its row: the stage and the defect planted there.
        section: &'static str,
    },
    /// No public report was found: the failure mode was designed here.
    DesignedHere {
        /// One sentence: why the failure mode matters.
        reason: &'static str,
    },
}

impl Source {
    /// The source as one Markdown cell (the README's provenance table is checked
    /// against it).
    pub fn markdown(self) -> String {
        match self {
            Source::Report { title, url } => format!("report: [{title}]({url})"),
            Source::Paper { title, section } => format!("paper: {title}, {section}"),
            Source::Standard { name, section } => format!("standard: {name}, {section}"),
            Source::ReferenceExperiment { section } => {
                format!("the reference experiment: {section}")
            }
            Source::DesignedHere { reason } => format!("designed here: {reason}"),
        }
    }
}
