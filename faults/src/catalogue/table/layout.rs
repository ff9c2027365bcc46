//! The layout layer: geometry (moves, reorders, viewport changes).

use crate::catalogue::{FaultSpec, Layer, Mechanism as M, Source, Stage};

pub(super) const TARGET_SHIFT: FaultSpec = FaultSpec {
    id: "layout.target_shift",
    layer: Layer::Layout,
    stage: Stage::Execute,
    mechanism: M::Page,
    tasks: tasks![Grid, Frame, ..MINIWOB],
    description: "the content shifts down (as when a late banner loads) between the observation and the action",
    injection: "a page script, triggered by the harness right before it acts, translates the content",
    parameters: "the shift, 60-140 px",
    witness: "the shift applied and when",
    implies: "the click lands where the target was: on something else",
    outcome_holds: false,
    not_fired_when: "the page's shift hook did not run",
    source: Source::Report {
        title: "learningequality/kolibri#8675: shifting UI elements cause a 'missed click'",
        url: "https://github.com/learningequality/kolibri/issues/8675",
    },
};

pub(super) const REORDERED: FaultSpec = FaultSpec {
    id: "layout.reordered",
    layer: Layer::Layout,
    stage: Stage::Execute,
    mechanism: M::Page,
    tasks: tasks![Grid],
    description: "the board's items are re-sorted between the observation and the action",
    injection:
        "a page script, triggered by the harness right before it acts, permutes the items' labels",
    parameters: "the permutation",
    witness: "the label now in the target's old box",
    implies: "the click selects whichever item moved into the target's box",
    outcome_holds: false,
    not_fired_when: "the permutation left the target in place",
    source: Source::DesignedHere {
        reason: "Sorted and live-updating lists reorder between a screenshot and the click it informs, so a point chosen from the old order selects a different item.",
    },
};

pub(super) const VIEWPORT_CHANGED: FaultSpec = FaultSpec {
    id: "layout.viewport_changed",
    layer: Layer::Layout,
    stage: Stage::Execute,
    mechanism: M::Browser,
    tasks: tasks![Grid],
    description: "the viewport narrows between the observation and the action; the responsive board re-centres",
    injection: "CDP Emulation.setDeviceMetricsOverride narrows the viewport right before the action; the page's board is centred on the viewport's width",
    parameters: "the new width, 960-1100 px",
    witness: "the viewport before and after",
    implies: "the board moves by half the width change: the click misses the target",
    outcome_holds: false,
    not_fired_when: "the viewport could not be changed",
    source: Source::Report {
        title: "browserbase/stagehand#1023: fix: set viewport to 1024x768 to make cua models work on advanced stealth",
        url: "https://github.com/browserbase/stagehand/pull/1023",
    },
};
