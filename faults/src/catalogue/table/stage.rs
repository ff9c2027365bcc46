//! The four reference stage faults of the design brief, one per stage of the round
//! trip. They keep their `stage.name` ids; their layers are the ones they break.

use crate::catalogue::{FaultSpec, Layer, Mechanism as M, Source, Stage};

pub(super) const TOKEN_LEAK: FaultSpec = FaultSpec {
    id: "parse.token_leak",
    layer: Layer::Tool,
    stage: Stage::Parse,
    mechanism: M::Harness,
    tasks: tasks![Search, ..MINIWOB.types_text()],
    description: "an end-of-message token (<|im_end|>) leaks into the text the action types",
    injection: "the parse stage skips stripping chat special tokens and appends the token to the first typed text",
    parameters: "none",
    witness: "the typed text before and after",
    implies: "the server receives the query with the token: not the requested record",
    outcome_holds: false,
    not_fired_when: "the reply types no text",
    source: Source::ReferenceExperiment {
        section: "parse stage, a chat end-of-message token left in the typed text",
    },
};

pub(super) const UNSCALED_COORDINATES: FaultSpec = FaultSpec {
    id: "execute.unscaled_coordinates",
    layer: Layer::Execution,
    stage: Stage::Execute,
    mechanism: M::Harness,
    tasks: tasks![Grid, ..MINIWOB],
    description: "screenshot-to-viewport scaling is skipped: a point in the 900x600 image lands at 3/4 of its 1200x800 target",
    injection: "the execute stage dispatches the image point as a viewport point",
    parameters: "none",
    witness: "the image point, the intended viewport point and the executed one",
    implies: "the click lands on another item or on blank space; the target is not selected",
    outcome_holds: false,
    not_fired_when: "the image and the viewport have the same size (there is nothing to scale)",
    source: Source::ReferenceExperiment {
        section: "execute stage, screenshot-to-viewport coordinate scaling skipped",
    },
};

pub(super) const IFRAME_NO_CHANGE: FaultSpec = FaultSpec {
    id: "feedback.iframe_no_change",
    layer: Layer::Tool,
    stage: Stage::Feedback,
    mechanism: M::Harness,
    tasks: tasks![Frame],
    description: "a click that worked inside an iframe is reported as \"No change detected.\"",
    injection: "the feedback stage replaces the tool message when its own hit test says the click went into an <iframe>",
    parameters: "none",
    witness: "the honest message and the reported one",
    implies: "the row is selected: the outcome happened and the tool message lies",
    outcome_holds: true,
    not_fired_when: "the click did not land on an iframe",
    source: Source::ReferenceExperiment {
        section: "feedback stage, a click that worked inside an iframe reported as no change",
    },
};

pub(super) const CAPTURE_BEFORE_TOOLTIP: FaultSpec = FaultSpec {
    id: "observe.capture_before_tooltip",
    layer: Layer::Tool,
    stage: Stage::Observe,
    mechanism: M::Harness,
    tasks: tasks![Chart],
    description: "the screenshot is captured before a hover tooltip has appeared",
    injection: "the observe stage skips the settle wait after a hover",
    parameters: "none",
    witness: "the page-clock instants of the hover, the capture and the tooltip",
    implies: "the observation does not show the value: the answer was never observed",
    outcome_holds: false,
    not_fired_when: "the capture still began after the tooltip appeared (a very slow machine)",
    source: Source::ReferenceExperiment {
        section: "observe stage, the screenshot captured before a hover tooltip appeared",
    },
};
