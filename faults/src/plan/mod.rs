//! A fault armed for one trial: the catalogue entry plus the trial's seed, and the hooks
//! the harness calls at each point of the round trip.
//!
//! Every hook is a pure function of its inputs and the seed, and has a no-op default for
//! faults that do not act there, so the round trip calls every hook unconditionally and
//! a fault acts only where it belongs. A hook that changed something returns a
//! [`Witness`]; one that changed nothing returns none.

mod coordinates;
mod network;
mod page;

pub use coordinates::Misread;

use crate::catalogue::Fault;
use crate::site::{NetworkRule, PageMod, SiteInjection};
use crate::witness::{UnscaledClickWitness, Witness};
use faultline_tasks::{parse_reply, seed, Action, CoordinateSpace, Layout, Point, Rect, Size};
use rand::Rng;
use serde_json::json;

/// What a fault arms on the fixture server: its network rules and its page changes.
type Injection = (Vec<NetworkRule>, Vec<PageMod>);

/// The end-of-message token the parse fault leaks.
pub const LEAKED_TOKEN: &str = "<|im_end|>";

/// How late a delayed page change lands (a held save response, a rollback), in ms after
/// the action. Both ends are clear of the round trip's observation points, so the load
/// cannot decide the race: later than the observation after the click (120 ms settle,
/// then the capture: a few hundred ms on a loaded machine), earlier than the next one of
/// an agent that waits 1.5 s. The range used to be 1.8-2.6 s, which straddled that next
/// observation (1.7-2.2 s after the click, depending on load): recovery episodes
/// differed between runs of the same seed.
pub(crate) const SETTLED_BEFORE_A_WAIT_ENDS: std::ops::RangeInclusive<u64> = 1000..=1300;

/// The message the iframe feedback fault reports instead of the honest one.
pub const NO_CHANGE_MESSAGE: &str = "No change detected.";

/// A fault armed for one trial.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultPlan {
    /// The catalogue entry being armed.
    pub fault: Fault,
    /// The trial's seed; every parameter the fault draws comes from it.
    pub seed: u64,
}

/// What the feedback hook knows about the step.
#[derive(Debug, Clone, Copy)]
pub struct FeedbackContext<'a> {
    /// The honest tool message (errors included).
    pub honest: &'a str,
    /// What the tool says when every action succeeds (the honest message with each
    /// error replaced by the action's success message).
    pub nominal: &'a str,
    /// The harness's own hit test: the last click went into an `<iframe>`.
    pub clicked_into_iframe: bool,
    /// The viewport point of the step's last click, if it clicked.
    pub last_click: Option<Point>,
}

/// Something the environment does between the observation and the action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeforeAct {
    /// Call the page's own `window.__fl_before_act()` (an injected script's change).
    PageHook,
    /// Change the viewport behind the harness's back (CDP).
    Viewport {
        /// The new viewport width, in CSS pixels.
        width: u32,
        /// The new viewport height, in CSS pixels.
        height: u32,
    },
}

/// The claim the false-completion fault makes.
pub const FALSE_CLAIM: &str = "The task is complete: I did what was asked.";

impl FaultPlan {
    /// Arms `fault` for the trial with `seed`.
    pub fn new(fault: Fault, seed: u64) -> FaultPlan {
        FaultPlan { fault, seed }
    }

    /// The armed fault's catalogue id.
    pub fn id(&self) -> &'static str {
        self.fault.id()
    }

    /// The RNG for this fault's parameters: a pure function of the trial seed and the id.
    fn rng(&self) -> rand_chacha::ChaCha8Rng {
        seed::rng(seed::derive(self.seed, &["fault", self.id()]))
    }

    /// What the fixture server must do for this trial's scope, if anything: the family
    /// of the fault draws its parameters from the plan's generator (`network.rs` for
    /// network rules, `page.rs` for page changes, one function per family).
    pub fn site(&self, layout: &Layout) -> Option<SiteInjection> {
        let mut rng = self.rng();
        let rng = &mut rng;
        let (network, page) = match self.fault {
            Fault::SlowResponse
            | Fault::ConnectionDropped
            | Fault::RequestHangs
            | Fault::TimeoutAsSuccess
            | Fault::ServerError
            | Fault::ServiceUnavailable
            | Fault::RateLimited
            | Fault::SessionExpired
            | Fault::ScriptBlocked
            | Fault::StylesheetDelayed
            | Fault::ImageMissing => network::network(self.fault, rng)?,
            Fault::CookieBanner | Fault::Modal | Fault::DecoyPopup => {
                page::overlay(self.fault, layout, rng)?
            }
            Fault::TargetShift | Fault::Reordered | Fault::ViewportChanged => {
                page::layout(self.fault, rng)?
            }
            Fault::StaleElement
            | Fault::DuplicateLabel
            | Fault::ShadowRoot
            | Fault::VirtualizedList
            | Fault::NeverSettles => page::dom(self.fault, layout, rng)?,
            Fault::ClickSwallowed
            | Fault::ControlDisabled
            | Fault::HandlerThrows
            | Fault::RendererCrash
            | Fault::MainThreadHang
            | Fault::SelectIgnored
            | Fault::EffectUndone
            | Fault::DoubleSubmit => page::execution(self.fault, rng)?,
            Fault::LabelRenamed
            | Fault::OptimisticToast
            | Fault::InjectedInstruction
            | Fault::LocaleVariant
            | Fault::HoverHighlight => page::semantic(self.fault, layout, rng)?,
            Fault::TokenLeak
            | Fault::UnscaledCoordinates
            | Fault::ProviderDownscale
            | Fault::DeviceScaleMismatch
            | Fault::WindowOffset
            | Fault::NormalisedGridMisread
            | Fault::IframeNoChange
            | Fault::CaptureBeforeTooltip
            | Fault::CaptureBeforeSettled
            | Fault::ErrorSwallowed
            | Fault::WrongFeedback
            | Fault::FalseCompletion
            | Fault::UnobservedValue => return None,
            // Injected by the DevTools proxy, on the harness's own connection.
            Fault::DevtoolsScaledPointer
            | Fault::DevtoolsDroppedRelease
            | Fault::DevtoolsDevicePixels
            | Fault::DevtoolsChromeOffset
            | Fault::DevtoolsStaleScreenshot
            | Fault::DevtoolsUnsettledScreenshot
            | Fault::DevtoolsStaleDom
            | Fault::DevtoolsProtocolError
            | Fault::DevtoolsCrashAfterInput
            | Fault::DevtoolsHeldAnswer => return None,
        };
        Some(SiteInjection {
            fault: self.id().to_string(),
            network,
            page,
        })
    }

    /// What changes between the observation and the action, if anything.
    pub fn before_act(&self, viewport: Size, layout: &Layout) -> Option<BeforeAct> {
        match self.fault {
            Fault::TargetShift | Fault::Reordered => Some(BeforeAct::PageHook),
            Fault::ViewportChanged => {
                // Narrow enough that the re-centred board moves the target's centre by
                // more than half its width (plus a margin), so the click cannot land on it.
                let t = target_rect(layout)?;
                let extra = f64::from(self.rng().random_range(0..=40u32));
                let shift = t.width / 2.0 + 8.0 + extra;
                let width = (f64::from(viewport.width) - 2.0 * shift).floor() as u32;
                Some(BeforeAct::Viewport {
                    width,
                    height: viewport.height,
                })
            }
            _ => None,
        }
    }

    /// The witness of a viewport change the harness made for [`BeforeAct::Viewport`].
    pub fn viewport_witness(&self, before: Size, after: Size) -> Option<Witness> {
        (self.fault == Fault::ViewportChanged && before != after).then(|| {
            Witness::new(
                self.id(),
                format!("viewport changed from {before} to {after} before the action"),
                json!({ "before": before, "after": after }),
            )
        })
    }

    /// Agent hook: rewrites the recorded decision's reply (self-report faults act on what
    /// the agent claims and does, before the parse stage).
    pub fn on_decision(&self, reply: &str) -> (String, Option<Witness>) {
        let lines: Vec<&str> = reply.lines().collect();
        let is_browser = |l: &str| {
            parse_reply(l)
                .map(|a| a.iter().all(Action::is_browser_action))
                .unwrap_or(false)
        };
        let browser_lines: Vec<usize> =
            (0..lines.len()).filter(|i| is_browser(lines[*i])).collect();
        match self.fault {
            Fault::FalseCompletion if browser_lines.len() >= 2 => {
                let drop = *browser_lines.last().expect("two or more");
                let mut out: Vec<String> = lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i != drop)
                    .map(|(_, l)| l.to_string())
                    .collect();
                out.push(FALSE_CLAIM.into());
                out.push("stop()".into());
                let text = out.join("\n");
                let w = Witness::new(
                    self.id(),
                    format!("dropped `{}` and claimed completion", lines[drop].trim()),
                    json!({ "original": reply, "rewritten": text, "dropped": lines[drop].trim(), "claim": FALSE_CLAIM }),
                );
                (text, Some(w))
            }
            Fault::DoubleSubmit => {
                let Some(click) = browser_lines
                    .iter()
                    .rev()
                    .find(|i| lines[**i].trim_start().starts_with("click"))
                else {
                    return (reply.to_string(), None);
                };
                let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
                out.insert(click + 1, lines[*click].to_string());
                let text = out.join("\n");
                let w = Witness::new(
                    self.id(),
                    format!("repeated `{}`", lines[*click].trim()),
                    json!({ "original": reply, "rewritten": text, "repeated": lines[*click].trim() }),
                );
                (text, Some(w))
            }
            Fault::UnobservedValue => {
                let hovers: Vec<usize> = browser_lines
                    .iter()
                    .copied()
                    .filter(|i| lines[*i].trim_start().starts_with("hover"))
                    .collect();
                if hovers.is_empty() {
                    return (reply.to_string(), None);
                }
                let text = lines
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| !hovers.contains(i))
                    .map(|(_, l)| *l)
                    .collect::<Vec<_>>()
                    .join("\n");
                let w = Witness::new(
                    self.id(),
                    "answered without hovering".to_string(),
                    json!({ "original": reply, "rewritten": text }),
                );
                (text, Some(w))
            }
            _ => (reply.to_string(), None),
        }
    }

    /// Execute hook: the error a dispatch fails with instead of reaching the browser.
    pub fn fails_dispatch(&self, action: &Action, at: Option<Point>) -> Option<String> {
        match (self.fault, action) {
            (Fault::ErrorSwallowed, Action::Click { .. }) => Some(format!(
                "Error: could not dispatch the click at {}: the browser did not acknowledge Input.dispatchMouseEvent.",
                at.unwrap_or(Point::new(0.0, 0.0))
            )),
            _ => None,
        }
    }

    /// Parse hook: corrupts the parsed actions.
    pub fn on_parse(&self, actions: &mut [Action]) -> Option<Witness> {
        match self.fault {
            Fault::TokenLeak => {
                let text = actions.iter_mut().find_map(|a| match a {
                    Action::Type { text } => Some(text),
                    _ => None,
                })?;
                let original = text.clone();
                text.push_str(LEAKED_TOKEN);
                Some(Witness::new(
                    self.id(),
                    format!("typed {text:?}"),
                    json!({ "original": original, "corrupted": text }),
                ))
            }
            _ => None,
        }
    }

    /// Execute hook: given a pointer action's image point, returns the viewport point to
    /// dispatch (honestly: the point scaled from `image` to `viewport`).
    pub fn on_execute(
        &self,
        image_point: Point,
        image: Size,
        viewport: Size,
    ) -> (Point, Option<Witness>) {
        let intended = image_point.scale(image, viewport);
        match self.fault {
            Fault::UnscaledCoordinates if intended != image_point => (
                image_point,
                Some(Witness::new(
                    self.id(),
                    format!("clicked {image_point} instead of {intended}"),
                    serde_json::to_value(UnscaledClickWitness {
                        image_point,
                        intended,
                        executed: image_point,
                    })
                    .expect("points serialise"),
                )),
            ),
            _ => match self.misread(image, viewport) {
                Some(m) => {
                    let model = m.model_point(intended, viewport, image_point);
                    let executed = m.executed(model, viewport);
                    // Half a pixel either way is the same pixel: nothing misread.
                    if (executed.x - intended.x).abs() < 0.5
                        && (executed.y - intended.y).abs() < 0.5
                    {
                        return (intended, None);
                    }
                    let w = Witness::new(
                        self.id(),
                        format!("clicked {executed} instead of {intended} ({})", m.seen()),
                        json!({
                            "image_point": image_point,
                            "seen": m.seen(),
                            "misread": m,
                            "model_point": model,
                            "intended": intended,
                            "executed": executed,
                        }),
                    );
                    (executed, Some(w))
                }
                None => (intended, None),
            },
        }
    }

    /// Whether the fault is one of the coordinate-space family ([`Misread::FAMILY`]):
    /// the execute stage then hit-tests where its point landed.
    pub fn misreads_coordinates(&self) -> bool {
        Misread::FAMILY.contains(&self.fault)
    }

    /// The coordinate-space misread this plan's fault makes, drawn from the trial seed
    /// (`None` outside the family). `space` is the extent of the reply's coordinate space.
    pub fn misread(&self, space: Size, viewport: Size) -> Option<Misread> {
        let grid_reply = space == CoordinateSpace::Normalized1000.extent(space);
        Misread::draw(self.fault, viewport, grid_reply, &mut self.rng())
    }

    /// Whether the execute stage must run the harness's own hit test of each click (the
    /// feedback hook's condition); an honest tool does not need it.
    pub fn needs_iframe_hit_test(&self) -> bool {
        self.fault == Fault::IframeNoChange
    }

    /// Feedback hook: the message the tool reports.
    pub fn on_feedback(&self, ctx: &FeedbackContext<'_>) -> (String, Option<Witness>) {
        let lie = |reported: String, summary: String| {
            let w = Witness::new(
                self.id(),
                summary,
                json!({ "original": ctx.honest, "reported": reported }),
            );
            (reported, Some(w))
        };
        match self.fault {
            Fault::ErrorSwallowed | Fault::TimeoutAsSuccess if ctx.honest != ctx.nominal => lie(
                ctx.nominal.to_string(),
                format!("reported {:?} instead of {:?}", ctx.nominal, ctx.honest),
            ),
            Fault::WrongFeedback if ctx.honest == ctx.nominal => match ctx.last_click {
                Some(p) => {
                    let reported = format!("Error: no clickable element at {p}.");
                    lie(
                        reported.clone(),
                        format!("reported {reported:?} instead of {:?}", ctx.honest),
                    )
                }
                None => (ctx.honest.to_string(), None),
            },
            Fault::IframeNoChange if ctx.clicked_into_iframe => (
                NO_CHANGE_MESSAGE.to_string(),
                Some(Witness::new(
                    self.id(),
                    format!("reported {NO_CHANGE_MESSAGE:?} instead of {:?}", ctx.honest),
                    json!({ "original": ctx.honest, "reported": NO_CHANGE_MESSAGE }),
                )),
            ),
            _ => (ctx.honest.to_string(), None),
        }
    }

    /// Whether the harness crashes the page's renderer right after the action (the
    /// renderer-crash fault). The crash is then the fault's effect, a measured trial; a
    /// crash no armed fault caused is an infrastructure failure.
    pub fn crashes_renderer(&self) -> bool {
        self.fault == Fault::RendererCrash
    }

    /// Whether the page hangs its main thread after the action (the main-thread-hang
    /// fault): an unresponsive page is then the fault's effect, not an infrastructure
    /// failure.
    pub fn hangs_page(&self) -> bool {
        self.fault == Fault::MainThreadHang
    }

    /// The renderer-crash fault's witness: the crash as Chromium reported it.
    pub fn crash_witness(&self, reported: &str) -> Option<Witness> {
        self.crashes_renderer().then(|| {
            Witness::new(
                self.id(),
                format!("renderer crashed after the action: {reported}"),
                json!({
                    "reported": reported,
                    "cause": "the armed fault (a measured trial, not an infrastructure failure)",
                }),
            )
        })
    }

    /// Execute and observe hook: whether the tool returns from every `wait(ms)` at once
    /// and captures without its settle wait (`tool.capture_before_settled`).
    pub fn skips_waits(&self) -> bool {
        self.fault == Fault::CaptureBeforeSettled
    }

    /// The unsettled-capture fault's witness: it fired when the reply asked for a wait
    /// the tool skipped. `skipped` holds one entry per skipped wait: the ms asked for
    /// and what the next pointer action met at its point at that instant (`null` when
    /// no pointer action followed).
    pub fn skipped_waits_witness(
        &self,
        skipped: &[(u64, Option<serde_json::Value>)],
        settle_skipped_ms: u64,
    ) -> Option<Witness> {
        if !self.skips_waits() || skipped.is_empty() {
            return None;
        }
        let total: u64 = skipped.iter().map(|(ms, _)| ms).sum();
        let summary = format!(
            "skipped {} wait(s) of {total} ms in all and the {settle_skipped_ms} ms settle: the next action and the capture came at once",
            skipped.len()
        );
        Some(Witness::new(
            self.id(),
            summary,
            json!({
                "skipped": skipped
                    .iter()
                    .map(|(ms, met)| json!({ "ms": ms, "next_action_met": met }))
                    .collect::<Vec<_>>(),
                "settle_skipped_ms": settle_skipped_ms,
            }),
        ))
    }

    /// Observe hook: whether to skip the settle wait that normally follows a hover.
    pub fn skips_hover_settle(&self) -> bool {
        self.fault == Fault::CaptureBeforeTooltip
    }

    /// The observe fault's witness, from the harness's own page-clock readings: it fired
    /// when the capture began before the tooltip was shown (or the tooltip never showed
    /// within the normal settle time). A tooltip that appears mid-capture is not seen
    /// either: the ledger requires it for the whole capture.
    pub fn capture_witness(
        &self,
        hover_at_ms: f64,
        capture_at_ms: f64,
        tooltip_shown_at_ms: Option<f64>,
    ) -> Option<Witness> {
        if !self.skips_hover_settle() {
            return None;
        }
        let early = match tooltip_shown_at_ms {
            Some(shown) => capture_at_ms < shown,
            None => true,
        };
        let summary = match tooltip_shown_at_ms {
            Some(t) => format!(
                "captured {:.0} ms after the hover, tooltip shown at {:.0} ms",
                capture_at_ms - hover_at_ms,
                t - hover_at_ms
            ),
            None => format!(
                "captured {:.0} ms after the hover, tooltip never shown",
                capture_at_ms - hover_at_ms
            ),
        };
        early.then(|| {
            Witness::new(
                self.id(),
                summary,
                json!({
                    "hover_at_ms": hover_at_ms,
                    "capture_at_ms": capture_at_ms,
                    "tooltip_shown_at_ms": tooltip_shown_at_ms,
                }),
            )
        })
    }
}

/// The marker the connection-drop fault cuts the results page before.
pub const RESULTS_MARKER: &str = "<div id=\"results\"";

/// The box of the thing the instruction names, in viewport coordinates: the task's own
/// target box (`faultline_tasks::task::Task::target_rect`), where the page-side faults
/// aim.
pub fn target_rect(layout: &Layout) -> Option<Rect> {
    layout.target_rect()
}

#[cfg(test)]
mod tests;
