//! The protocol faults: injected by the DevTools proxy into a browser connection
//! (`Mechanism::Devtools`): an external harness's own, when it connects through the proxy
//! its claim offers, or faultline's own engine's, when a built-in run sets `[browser]
//! devtools_proxy = true`. Their witness is the proxy's record of the message it changed.

use crate::catalogue::{FaultSpec, Layer, Mechanism as M, Source, Stage};

pub(super) const SCALED_POINTER: FaultSpec = FaultSpec {
    id: "execution.devtools_scaled_pointer",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Devtools,
    tasks: tasks![Grid, Frame, Form, ..MINIWOB],
    description: "every mouse event's coordinates are scaled x0.75 on the way to the browser (a screenshot-to-viewport scale applied twice)",
    injection: "the DevTools proxy multiplies Input.dispatchMouseEvent's x and y by 0.75",
    parameters: "none (the factor is fixed at 0.75)",
    witness: "each rewritten event: its type, its point before and after, the session, the time",
    implies: "the click lands at 0.75x its point: off the target, so nothing (or the wrong thing) is selected",
    outcome_holds: false,
    not_fired_when: "the harness sent no mouse event through the proxy (it never clicked, or did not connect through it)",
    source: Source::Report {
        title: "trycua/cua#898: [computer-server] MCP screenshot auto-resize breaks coordinates translation",
        url: "https://github.com/trycua/cua/issues/898",
    },
};

pub(super) const DROPPED_RELEASE: FaultSpec = FaultSpec {
    id: "execution.devtools_dropped_release",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Devtools,
    tasks: tasks![Grid, Frame, Form, ..MINIWOB],
    description: "a click's mouseReleased is never delivered, and the harness is told it was",
    injection: "the DevTools proxy answers Input.dispatchMouseEvent (mouseReleased) with an empty success instead of relaying it",
    parameters: "none",
    witness: "the dropped release: its point, the session, the fake answer, the time",
    implies: "the page saw a press without a release: no click, nothing selected",
    outcome_holds: false,
    not_fired_when: "the harness released no mouse button through the proxy",
    source: Source::DesignedHere {
        reason: "A click is two protocol messages, and a driver that loses the release while reporting the click as done leaves a press that never became a click.",
    },
};

pub(super) const STALE_SCREENSHOT: FaultSpec = FaultSpec {
    id: "tool.devtools_stale_screenshot",
    layer: Layer::Tool,
    stage: Stage::Observe,
    mechanism: M::Devtools,
    tasks: tasks![Search, Grid, Frame, Chart, Form, Select, ..MINIWOB],
    description: "the screenshot after an action is the frame from before it",
    injection: "before the first action since the harness's last capture, the DevTools proxy captures a frame of its own; the harness's next Page.captureScreenshot is answered with it",
    parameters: "none (the capture's format follows the harness's own last capture)",
    witness: "the answered capture: the sizes of the fresh and the stale image data, when the stale one was taken",
    implies: "nothing on the page: the action happened as the ledger shows; only the harness's observation is stale",
    outcome_holds: true,
    not_fired_when: "the harness captured no screenshot after an action through the proxy",
    source: Source::Report {
        title: "kunchenguid/chrome-devtools-axi#99: screenshot returns a stale frame after navigation",
        url: "https://github.com/kunchenguid/chrome-devtools-axi/issues/99",
    },
};

pub(super) const PROTOCOL_ERROR: FaultSpec = FaultSpec {
    id: "tool.devtools_protocol_error",
    layer: Layer::Tool,
    stage: Stage::Execute,
    mechanism: M::Devtools,
    tasks: tasks![Search, Grid, Frame, Chart, Form, Select, ..MINIWOB],
    description: "the first action is answered with a protocol error and not delivered",
    injection: "the DevTools proxy answers the first mousePressed, keyDown or insertText with {code: -32000} instead of relaying it",
    parameters: "none",
    witness: "the refused command: its method and params, the error sent, the time",
    implies: "the first action never reached the page; what follows depends on the harness (a retry may still achieve it)",
    outcome_holds: false,
    not_fired_when: "the harness sent no action through the proxy",
    source: Source::Report {
        title: "puppeteer/puppeteer#11924: [Bug]: Target closed when doing a page.click",
        url: "https://github.com/puppeteer/puppeteer/issues/11924",
    },
};

pub(super) const CRASH_AFTER_INPUT: FaultSpec = FaultSpec {
    id: "tool.devtools_crash_after_input",
    layer: Layer::Tool,
    stage: Stage::Execute,
    mechanism: M::Devtools,
    tasks: tasks![Search, Grid, Frame, Chart, Form, Select, ..MINIWOB],
    description: "the page's renderer crashes right after the first input",
    injection: "once the first mouseReleased, keyUp or insertText is answered, the DevTools proxy sends Page.crash on that page's session",
    parameters: "none",
    witness: "the input after which Page.crash was sent, its session, the time",
    implies: "the first input reached the page (the ledger has it) and nothing after it did: a one-click task may be done, a longer one is not; nothing later is observed",
    outcome_holds: false,
    not_fired_when: "the harness completed no input through the proxy",
    source: Source::Report {
        title: "puppeteer/puppeteer#5974: Error: Page crashed! at Page._onTargetCrashed",
        url: "https://github.com/puppeteer/puppeteer/issues/5974",
    },
};

pub(super) const DEVICE_PIXELS: FaultSpec = FaultSpec {
    id: "execution.devtools_device_pixels",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Devtools,
    tasks: tasks![Grid, Frame, Form, ..MINIWOB],
    description: "mouse coordinates arrive in the device pixels of a 2x display, not CSS pixels",
    injection: "the DevTools proxy multiplies Input.dispatchMouseEvent's x and y by 2",
    parameters: "none (the factor is fixed at 2)",
    witness: "each rewritten event: its type, its point before and after, the session, the time",
    implies: "the click lands at twice its point, off the target (or outside the viewport, where it hits nothing)",
    outcome_holds: false,
    not_fired_when: "the harness sent no mouse event through the proxy",
    source: Source::Report {
        title: "AmrDab/clawdcursor#154: macOS HiDPI/Retina: mouse_* clicks & drags land 2x off-target",
        url: "https://github.com/AmrDab/clawdcursor/issues/154",
    },
};

pub(super) const CHROME_OFFSET: FaultSpec = FaultSpec {
    id: "execution.devtools_chrome_offset",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Devtools,
    tasks: tasks![Grid, Frame, Form, ..MINIWOB],
    description: "mouse coordinates are shifted down by a window's chrome (title bar, tabs, toolbar), as if measured from the screen",
    injection: "the DevTools proxy adds a fixed offset to Input.dispatchMouseEvent's y",
    parameters: "the offset, 72 to 112 CSS pixels, from the trial seed",
    witness: "each rewritten event: its type, its point before and after, the session, the time",
    implies: "the click lands the offset below its point: on whatever is there instead of the target",
    outcome_holds: false,
    not_fired_when: "the harness sent no mouse event through the proxy",
    source: Source::Report {
        title: "CursorTouch/Windows-MCP#99: Click location problem",
        url: "https://github.com/CursorTouch/Windows-MCP/issues/99",
    },
};

pub(super) const UNSETTLED_SCREENSHOT: FaultSpec = FaultSpec {
    id: "tool.devtools_unsettled_screenshot",
    layer: Layer::Tool,
    stage: Stage::Observe,
    mechanism: M::Devtools,
    tasks: tasks![Search, Grid, Frame, Chart, Form, Select, ..MINIWOB],
    description: "the screenshot after an action is the frame from the instant its last input was answered, before the page settled",
    injection: "when an action's last input (mouseReleased, keyUp, insertText) is answered, the DevTools proxy captures a frame of its own; the harness's next Page.captureScreenshot is answered with it",
    parameters: "none (the capture's format follows the harness's own last capture)",
    witness: "the answered capture: the sizes of the fresh and the unsettled image data, when the unsettled one was taken",
    implies: "nothing on the page: the action happened as the ledger shows; only the harness's observation misses what the page did after it",
    outcome_holds: true,
    not_fired_when: "the harness captured no screenshot after an action through the proxy, or captured before the proxy's own capture was answered",
    source: Source::Report {
        title: "browserbase/stagehand#1635: Agent screenshot timing issues",
        url: "https://github.com/browserbase/stagehand/issues/1635",
    },
};

pub(super) const STALE_DOM: FaultSpec = FaultSpec {
    id: "tool.devtools_stale_dom",
    layer: Layer::Tool,
    stage: Stage::Observe,
    mechanism: M::Devtools,
    tasks: tasks![Search, Grid, Frame, Chart, Form, Select, ..MINIWOB],
    description: "a DOM read after an action is answered with what the same read returned before it",
    injection: "the DevTools proxy keeps the answer to each DOM read (a script reading `document`, DOM.*, DOMSnapshot.*, Accessibility.get*) sent before the page's first action; the same read after it is answered with the kept answer",
    parameters: "none",
    witness: "each replaced answer: the read's method, the sizes of the fresh and the kept answer, the session, the time",
    implies: "nothing on the page: the action happened as the ledger shows; only the harness's reading of the DOM is from before it (its screenshot is fresh)",
    outcome_holds: true,
    not_fired_when: "the harness made no DOM read after an action that it had also made before it, or that read's answer did not change",
    source: Source::Report {
        title: "browser-use/browser-use#5297: Stop reusing cached DOM after browser-state timeouts",
        url: "https://github.com/browser-use/browser-use/pull/5297",
    },
};

pub(super) const HELD_ANSWER: FaultSpec = FaultSpec {
    id: "tool.devtools_held_answer",
    layer: Layer::Tool,
    stage: Stage::Execute,
    mechanism: M::Devtools,
    tasks: tasks![Search, Grid, Frame, Chart, Form, Select, ..MINIWOB],
    description: "the first action is delivered, and its answer is held back past a harness's per-call deadline",
    injection: "the DevTools proxy relays the first mousePressed, keyDown or insertText at once and holds the browser's answer to it",
    parameters: "the hold, 12000-14000 ms, from the trial seed: past a 10000 ms deadline for one call",
    witness: "the held command: its method, how long its answer was held, the session, the time",
    implies: "the input reached the page (the ledger has it); only its answer came late: a harness that waits is only slower and the outcome holds; one that gives up on the call reports a failure and sends nothing after it (faultline's own engine, at its 10 s call deadline: a click's release never comes, so nothing is selected)",
    outcome_holds: true,
    not_fired_when: "the harness sent no action through the proxy",
    source: Source::Report {
        title: "puppeteer/puppeteer#5730: page.click does not resolve when remote debugging",
        url: "https://github.com/puppeteer/puppeteer/issues/5730",
    },
};
