//! The resource layer: subresources (scripts, stylesheets, images).

use crate::catalogue::{FaultSpec, Layer, Mechanism as M, Source, Stage};

pub(super) const SCRIPT_BLOCKED: FaultSpec = FaultSpec {
    id: "resource.script_blocked",
    layer: Layer::Resource,
    stage: Stage::Execute,
    mechanism: M::Network,
    tasks: tasks![Grid],
    description: "the script that handles the board's clicks is blocked (404): the buttons render but do nothing",
    injection: "server middleware refuses the grid's handler script",
    parameters: "none",
    witness: "the route refused",
    implies: "no item is selected (the click reaches a button with no handler)",
    outcome_holds: false,
    not_fired_when: "the page never requested its script",
    source: Source::DesignedHere {
        reason: "Pages whose handlers come from a script that failed to load render normally and do nothing, so a screenshot alone cannot tell a dead button from a live one.",
    },
};

pub(super) const STYLESHEET_DELAYED: FaultSpec = FaultSpec {
    id: "resource.stylesheet_delayed",
    layer: Layer::Resource,
    stage: Stage::Execute,
    mechanism: M::Network,
    tasks: tasks![Grid],
    description: "the stylesheet that positions the board is loaded after the page's load event and arrives late, so the layout jumps after the action",
    injection: "the page loads its stylesheet after load; server middleware holds it until the page reports its first click, then delays it",
    parameters: "the delay after the click, 1000-1300 ms: after the observation of the click, before the next one of an agent that waits 1.5 s (4 s at most without a click)",
    witness: "the delay and the page-clock instants of the click and of the stylesheet applying",
    implies: "the click lands on the unstyled layout: not on the target",
    outcome_holds: false,
    not_fired_when: "the stylesheet applied before the click (no click within 4 s of the page's load)",
    source: Source::DesignedHere {
        reason: "Late CSS moves content after the agent has chosen its point, the same misclick a layout shift causes but triggered by loading order rather than by the page's own code.",
    },
};

pub(super) const IMAGE_MISSING: FaultSpec = FaultSpec {
    id: "resource.image_missing",
    layer: Layer::Resource,
    stage: Stage::Observe,
    mechanism: M::Network,
    tasks: tasks![Form],
    description: "the Save button's icon image is missing (404): a cosmetic failure that does not break the task",
    injection: "server middleware refuses the icon",
    parameters: "none",
    witness: "the route refused and the broken image reported by the page",
    implies: "the note is saved: the outcome happens, so any alarm is a false one",
    outcome_holds: true,
    not_fired_when: "the page never requested the icon",
    source: Source::DesignedHere {
        reason: "A missing icon is a failure that changes nothing that matters, and a verifier that flags it is raising a false alarm on a task that succeeded.",
    },
};
