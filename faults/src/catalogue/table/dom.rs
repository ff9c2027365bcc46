//! The DOM layer: document structure (re-renders, duplicates, shadow roots,
//! virtualization).

use crate::catalogue::{FaultSpec, Layer, Mechanism as M, Source, Stage};

pub(super) const STALE_ELEMENT: FaultSpec = FaultSpec {
    id: "dom.stale_element",
    layer: Layer::Dom,
    stage: Stage::Execute,
    mechanism: M::Page,
    tasks: tasks![Grid],
    description: "the board re-renders on pointerdown: the pressed button is replaced before the release, so no click reaches a button",
    injection: "a page script replaces every button with a fresh copy when a press begins",
    parameters: "none",
    witness: "the re-render and the node it replaced",
    implies: "no item is selected",
    outcome_holds: false,
    not_fired_when: "no press reached a button",
    source: Source::Report {
        title: "webdriverio/webdriverio#1396: Selenium \"Element is no longer attached to the DOM\" error not bubbled up, causes infinite loop",
        url: "https://github.com/webdriverio/webdriverio/issues/1396",
    },
};

pub(super) const DUPLICATE_LABEL: FaultSpec = FaultSpec {
    id: "dom.duplicate_label",
    layer: Layer::Dom,
    stage: Stage::Execute,
    mechanism: M::Page,
    tasks: tasks![Grid],
    description: "two controls carry the target's label: a promoted copy takes the target's place and the real one moves",
    injection: "the page renders a second button with the same label in the target's box and moves the real target",
    parameters: "where the real target moves",
    witness: "both buttons' boxes",
    implies: "the promoted copy is selected, not the target (the ledger knows them apart by id)",
    outcome_holds: false,
    not_fired_when: "never (the page is rendered that way)",
    source: Source::Report {
        title: "brennhill/Kaboom-Browser-AI-Devtools-MCP#316: Ambiguous text selectors silently click first match",
        url: "https://github.com/brennhill/Kaboom-Browser-AI-Devtools-MCP/issues/316",
    },
};

pub(super) const SHADOW_ROOT: FaultSpec = FaultSpec {
    id: "dom.shadow_root",
    layer: Layer::Dom,
    stage: Stage::Observe,
    mechanism: M::Page,
    tasks: tasks![Grid],
    description: "the board's buttons live inside a closed shadow root: clicks work, the document's DOM does not show them",
    injection: "a page script moves the board into a closed shadow root with its own handler",
    parameters: "none",
    witness: "the shadow host",
    implies: "the target is selected: the outcome happens; a DOM-reading check cannot see it",
    outcome_holds: true,
    not_fired_when: "the page's script did not run",
    source: Source::Report {
        title: "microsoft/playwright#23047: [Feature] Allow forcing open closed shadow DOM roots",
        url: "https://github.com/microsoft/playwright/issues/23047",
    },
};

pub(super) const VIRTUALIZED_LIST: FaultSpec = FaultSpec {
    id: "dom.virtualized_list",
    layer: Layer::Dom,
    stage: Stage::Execute,
    mechanism: M::Page,
    tasks: tasks![Frame],
    description: "the orders table is virtualized with more rows above the target: the target is out of view and not in the DOM",
    injection: "the frame renders a virtual list with extra leading rows and only the rows in view in the DOM",
    parameters: "the number of extra rows, 15-30",
    witness: "whether the target was in the DOM when the click came",
    implies: "another row is selected",
    outcome_holds: false,
    not_fired_when: "the target happened to be in view",
    source: Source::Report {
        title: "apireno/DOMShell#35: Virtualized lists: scroll command doesn't advance the inner scroll container",
        url: "https://github.com/apireno/DOMShell/issues/35",
    },
};

pub(super) const NEVER_SETTLES: FaultSpec = FaultSpec {
    id: "dom.never_settles",
    layer: Layer::Dom,
    stage: Stage::Observe,
    mechanism: M::Page,
    tasks: tasks![Grid, Form],
    description: "a live feed in the corner rewrites part of the page every few tens of milliseconds, forever: the DOM never settles",
    injection: "a page script updates a small live-ticker element on a fixed interval from load on",
    parameters: "the update interval, 40-80 ms",
    witness: "the ticker starting, with its interval",
    implies: "the action works as usual (the outcome holds); a wait for a stable DOM never ends without a cap, and every before/after comparison sees a change",
    outcome_holds: true,
    not_fired_when: "the page's script did not run",
    source: Source::DesignedHere {
        reason: "Tickers, feeds and clocks keep rewriting the page, so a harness that waits for the DOM to go quiet either never observes or gives up on a timeout it reports as something else.",
    },
};
