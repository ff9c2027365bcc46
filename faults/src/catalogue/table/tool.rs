//! The tool layer: the harness's own tool (parsing, messages, captures, error handling).

use crate::catalogue::{FaultSpec, Layer, Mechanism as M, Source, Stage};

pub(super) const ERROR_SWALLOWED: FaultSpec = FaultSpec {
    id: "tool.error_swallowed",
    layer: Layer::Tool,
    stage: Stage::Feedback,
    mechanism: M::Harness,
    tasks: tasks![Grid, Frame],
    description: "the click fails to dispatch and the tool reports success anyway",
    injection: "the execute stage drops the click with a dispatch error; the feedback stage reports the success message",
    parameters: "none",
    witness: "the swallowed error and the reported message",
    implies: "nothing was clicked",
    outcome_holds: false,
    not_fired_when: "the step had no click",
    source: Source::Report {
        title: "browser-use/browser-use#5438: Bug: click, dropdown_options, and select_dropdown report 'element not found' as success instead of error",
        url: "https://github.com/browser-use/browser-use/issues/5438",
    },
};

pub(super) const TIMEOUT_AS_SUCCESS: FaultSpec = FaultSpec {
    id: "tool.timeout_as_success",
    layer: Layer::Tool,
    stage: Stage::Feedback,
    mechanism: M::Harness,
    tasks: tasks![Search],
    description: "the navigation after the submit times out and the tool reports success",
    injection: "server middleware holds the search request; the feedback stage drops the tool's timeout error",
    parameters: "none",
    witness: "the swallowed timeout and the reported message",
    implies: "the search never ran: nothing was submitted",
    outcome_holds: false,
    not_fired_when: "the navigation did not time out",
    source: Source::Report {
        title: "LanternOps/breeze#4025: System Tools routes treat a command timeout as success",
        url: "https://github.com/LanternOps/breeze/issues/4025",
    },
};

pub(super) const WRONG_FEEDBACK: FaultSpec = FaultSpec {
    id: "tool.wrong_feedback",
    layer: Layer::Tool,
    stage: Stage::Feedback,
    mechanism: M::Harness,
    tasks: tasks![Grid],
    description: "a click that worked is reported as \"Error: no clickable element at (x, y).\"",
    injection: "the feedback stage replaces the message of every successful click",
    parameters: "none",
    witness: "the honest message and the reported one",
    implies: "the target is selected: the outcome happened and the tool message lies",
    outcome_holds: true,
    not_fired_when: "the step had no click",
    source: Source::Report {
        title: "NotASithLord/peerd#450: page.click reports successful selector clicks as false",
        url: "https://github.com/NotASithLord/peerd/issues/450",
    },
};

pub(super) const CAPTURE_BEFORE_SETTLED: FaultSpec = FaultSpec {
    id: "tool.capture_before_settled",
    layer: Layer::Tool,
    stage: Stage::Observe,
    mechanism: M::Harness,
    tasks: tasks![..MINIWOB.plan_waits()],
    description: "the tool returns from every wait(ms) at once and captures without its settle wait: the actions after a wait and the observation meet a page that has not settled (an autocomplete menu not drawn yet, an accordion still opening)",
    injection: "the execute stage skips each wait(ms) of the reply; the observe stage skips its settle wait",
    parameters: "none",
    witness: "each wait skipped (the ms asked), and what the next pointer action met at its point at that instant (element, id, class, text)",
    implies: "MiniWoB's reward decides: the click meant for what the wait let appear lands on the page as it was, so the episode is not rewarded (unless the page got far enough before the click arrived on a slow machine, or a start-only autocomplete query accepts the typed start)",
    outcome_holds: false,
    not_fired_when: "the reply asked for no wait",
    source: Source::Report {
        title: "brennhill/Kaboom-Browser-AI-Devtools-MCP#362: SPA navigation timing: screenshot captures previous page after click",
        url: "https://github.com/brennhill/Kaboom-Browser-AI-Devtools-MCP/issues/362",
    },
};

pub(super) const RENDERER_CRASH: FaultSpec = FaultSpec {
    id: "tool.renderer_crash",
    layer: Layer::Tool,
    stage: Stage::Observe,
    mechanism: M::Browser,
    tasks: tasks![Grid, Form],
    description: "the page's renderer process crashes right after the action: there is no page left to observe",
    injection: "a page script intercepts the click on the target before the page's handler; the harness then crashes the page's renderer (CDP Page.crash)",
    parameters: "none",
    witness: "the crash as Chromium reported it (Inspector.targetCrashed)",
    implies: "no selection, no write: the page died before its handler ran; a tool must report the crash (one that waits forever or reports success is wrong)",
    outcome_holds: false,
    not_fired_when: "Chromium did not report the crash within the harness's call deadline (the trial then fails as an infrastructure error)",
    source: Source::Report {
        title: "puppeteer/puppeteer#262: Puppeteer doesn't tell anything meaningful when the page crashes",
        url: "https://github.com/puppeteer/puppeteer/issues/262",
    },
};
