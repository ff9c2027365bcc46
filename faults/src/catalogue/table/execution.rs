//! The execution layer: input reaching (or not reaching) the page's handlers.

use crate::catalogue::{FaultSpec, Layer, Mechanism as M, Source, Stage};

pub(super) const CLICK_SWALLOWED: FaultSpec = FaultSpec {
    id: "execution.click_swallowed",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Page,
    tasks: tasks![Grid, Frame, ..MINIWOB],
    description: "an invisible layer over the page swallows every click",
    injection: "the page renders a transparent full-viewport layer on top",
    parameters: "none",
    witness: "the click the layer swallowed",
    implies: "nothing is selected; nothing visible changes",
    outcome_holds: false,
    not_fired_when: "no click reached the layer",
    source: Source::Report {
        title: "microsoft/playwright#12298: [BUG] \"subtree intercepts pointer events\" when clicking component with scheduled rotation",
        url: "https://github.com/microsoft/playwright/issues/12298",
    },
};

pub(super) const CONTROL_DISABLED: FaultSpec = FaultSpec {
    id: "execution.control_disabled",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Page,
    tasks: tasks![Grid, Form],
    description: "the control the action needs is disabled",
    injection: "the page renders the target button (or Save) with the disabled attribute",
    parameters: "none",
    witness: "the disabled control's box",
    implies: "the click does nothing: no selection, no write",
    outcome_holds: false,
    not_fired_when: "the page's script did not run",
    source: Source::Report {
        title: "plasmate-labs/plasmate#386: fix(mcp): fail closed when clicking compiled disabled controls",
        url: "https://github.com/plasmate-labs/plasmate/pull/386",
    },
};

pub(super) const HANDLER_THROWS: FaultSpec = FaultSpec {
    id: "execution.handler_throws",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Page,
    tasks: tasks![Grid, Form],
    description: "the click handler throws an exception before it updates anything",
    injection: "a page script intercepts the click on the target and throws a TypeError",
    parameters: "none",
    witness: "the exception thrown",
    implies: "no selection, no write; the page records an uncaught error",
    outcome_holds: false,
    not_fired_when: "no click reached the target",
    source: Source::DesignedHere {
        reason: "A handler that throws leaves the page unchanged and reports only to the console, which a harness that judges by pixels or by its own tool message never reads.",
    },
};

pub(super) const SELECT_IGNORED: FaultSpec = FaultSpec {
    id: "execution.select_ignored",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Page,
    tasks: tasks![Select],
    description: "a native <select> change silently does not apply: the menu shows the choice, the page's state never hears of it",
    injection: "a page script swallows the select's change and input events before the page's handler",
    parameters: "none",
    witness: "the change event swallowed",
    implies: "the order keeps its old shipping speed (no choice applied)",
    outcome_holds: false,
    not_fired_when: "the menu's value never changed",
    source: Source::Report {
        title: "alibaba/page-agent#704: fix(page-controller): set a select through the native value setter",
        url: "https://github.com/alibaba/page-agent/pull/704",
    },
};

pub(super) const MAIN_THREAD_HANG: FaultSpec = FaultSpec {
    id: "execution.main_thread_hang",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Page,
    tasks: tasks![Grid, Form],
    description: "the click handler hangs the page's main thread (an infinite-looking loop) for longer than the harness's deadlines",
    injection: "a page script intercepts the click on the target before the page's handler and blocks the main thread on a synchronous request the server holds (and records)",
    parameters: "the hang, 12000-14000 ms: past the harness's 10000 ms deadline for one call, so the click itself gets no answer",
    witness: "the click intercepted and the hang's length",
    implies: "no selection, no write; the page runs no task (no timer, no event, no promise) until the hang ends, and the click never returns; a tool that waits forever, or reports success, is wrong",
    outcome_holds: false,
    not_fired_when: "no click reached the target",
    source: Source::Report {
        title: "microsoft/playwright#13253: [Feature] evaluate timeout",
        url: "https://github.com/microsoft/playwright/issues/13253",
    },
};

pub(super) const EFFECT_UNDONE: FaultSpec = FaultSpec {
    id: "execution.effect_undone",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Page,
    tasks: tasks![Quiet],
    description: "the page undoes an effect that leaves the DOM alone as soon as it happens: a focused field is blurred, a scroll is reset to the top, a selection is cleared",
    injection: "a page script answers focusin with blur, scroll with scrollTo(0, 0) and selectionchange with removeAllRanges, on the next task",
    parameters: "none",
    witness: "the effect undone (focus, scroll or selection) and what it was",
    implies: "the field does not keep the focus, the section is not in view, nothing is selected; the markup is the same as before the action",
    outcome_holds: false,
    not_fired_when: "the action had no focus, scroll or selection to undo",
    source: Source::Report {
        title: "SkillfulAgents/SuperAgent#1056: fix(browser): report what a click did — dialogs, announcements, control state, focus — never a verdict",
        url: "https://github.com/SkillfulAgents/SuperAgent/pull/1056",
    },
};

// ---- the coordinate-space family (harness side: the execute stage's conversions) ----

pub(super) const PROVIDER_DOWNSCALE: FaultSpec = FaultSpec {
    id: "execution.provider_downscale",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Harness,
    tasks: tasks![Grid, ..MINIWOB],
    description: "the model provider downscaled the screenshot (1568 px long edge, or 1.15 MP) and the executor scaled the model's point from the size it sent: clicks land 23-45 % short",
    injection: "the execute stage converts the model's point, written in the provider's downscaled image, from the capture's size to the viewport",
    parameters: "the capture (a 2x device-pixel screenshot, whole or capped at 2048 px) and the provider's rule (long edge alone, or with the 1.15 MP budget), from the trial seed",
    witness: "the image point, the image the model saw, the model's point in it, the intended viewport point, the dispatched one and the elements each meets",
    implies: "the click lands on another element or on blank space; the target is not selected",
    outcome_holds: false,
    not_fired_when: "the dispatched point still meets the element the intended one meets",
    source: Source::Report {
        title: "domdomegg/computer-use-mcp#35: Fix coordinate scaling for downsampled screenshots",
        url: "https://github.com/domdomegg/computer-use-mcp/pull/35",
    },
};

pub(super) const DEVICE_SCALE_MISMATCH: FaultSpec = FaultSpec {
    id: "execution.device_scale_mismatch",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Harness,
    tasks: tasks![Grid, ..MINIWOB],
    description: "the page runs at device scale factor 2 or 3 and the executor confuses device and CSS pixels: clicks land at DSF times, or 1/DSF of, the intended point",
    injection: "the execute stage dispatches device pixels as CSS pixels (the screenshot in device pixels), or divides CSS pixels by the factor (the screenshot in CSS pixels)",
    parameters: "the device scale factor (2 or 3) and which way round, from the trial seed",
    witness: "the image point, the space the model saw, the model's point in it, the intended viewport point, the dispatched one and the elements each meets",
    implies: "the click lands on another element, on blank space or outside the viewport; the target is not selected",
    outcome_holds: false,
    not_fired_when: "the dispatched point still meets the element the intended one meets",
    source: Source::Report {
        title: "trycua/cua#1739: cua-computer-server (Python): screenshot ↔ click coordinate space mismatch on macOS Retina/AVF",
        url: "https://github.com/trycua/cua/issues/1739",
    },
};

pub(super) const WINDOW_OFFSET: FaultSpec = FaultSpec {
    id: "execution.window_offset",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Harness,
    tasks: tasks![Grid, ..MINIWOB],
    description: "the model saw the whole window, its page offset by the browser's chrome, and the executor dispatches the window point as a viewport point, or scales it by a factor inferred from the offset",
    injection: "the execute stage adds the chrome offset to the point, or scales the offset point by the viewport's size over the window's",
    parameters: "the chrome offset ((128, 81), a 47 px header bar or a (8, 31) window frame) and whether the tool subtracts or scales, from the trial seed",
    witness: "the image point, the space the model saw, the model's point in it, the intended viewport point, the dispatched one and the elements each meets",
    implies: "the click lands below and right of the target, on another element or on blank space; the target is not selected",
    outcome_holds: false,
    not_fired_when: "the dispatched point still meets the element the intended one meets",
    source: Source::Report {
        title: "trycua/cua#3237: Linux X11: pixel action frame excludes title bar while get_window_state screenshot includes it (~47px systematic miss)",
        url: "https://github.com/trycua/cua/issues/3237",
    },
};

pub(super) const NORMALISED_GRID_MISREAD: FaultSpec = FaultSpec {
    id: "execution.normalised_grid_misread",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Harness,
    tasks: tasks![Grid, ..MINIWOB],
    description: "the reply's points are read in the other convention: a 0-1000 grid used as viewport pixels, or screenshot pixels read as a 0-1000 grid",
    injection: "the execute stage reads a grid reply's numbers as viewport pixels, and a pixel reply's numbers as thousandths of the viewport",
    parameters: "none: the direction follows from the reply's own coordinate space",
    witness: "the image point, the space the model saw, the intended viewport point, the dispatched one and the elements each meets",
    implies: "the click lands on another element or on blank space; the target is not selected",
    outcome_holds: false,
    not_fired_when: "the dispatched point still meets the element the intended one meets",
    source: Source::Report {
        title: "rdi-berkeley/agents-last-exam#57: feat(ale-claw): rescale normalized (Gemini) pointer coordinates to pixels",
        url: "https://github.com/rdi-berkeley/agents-last-exam/pull/57",
    },
};
