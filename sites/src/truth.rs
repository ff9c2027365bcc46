//! Reading a ledger against a layout: did the intended outcome happen?
//!
//! This is the answer key. Only scoring calls it (it needs a [`Ledger`], which needs the
//! run's [`crate::LedgerKey`]).

use crate::ledger::Ledger;
use faultline_tasks::layout::LayoutSpec;
use faultline_tasks::Layout;
use serde::{Deserialize, Serialize};

/// The ledger's verdict on one trial or episode.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Truth {
    /// The intended outcome happened.
    pub achieved: bool,
    /// What happened, in words, for reports and transcripts.
    pub detail: String,
}

impl Truth {
    fn yes(detail: String) -> Truth {
        Truth {
            achieved: true,
            detail,
        }
    }
    fn no(detail: String) -> Truth {
        Truth {
            achieved: false,
            detail,
        }
    }
}

/// Judges `ledger` against what `layout` asked for.
pub fn judge(layout: &Layout, ledger: &Ledger) -> Truth {
    match &layout.spec {
        LayoutSpec::Search(s) => match ledger.last_of_kind("submitted") {
            None => Truth::no("nothing was submitted".into()),
            Some(e) => {
                let q = e.data["query"].as_str().unwrap_or_default();
                // Results count as shown only if their response arrived whole.
                let cut = ledger
                    .events
                    .iter()
                    .any(|t| t.kind == "response_truncated" && t.seq > e.seq);
                if q != s.target {
                    Truth::no(format!("submitted {q:?}, expected {:?}", s.target))
                } else if cut {
                    Truth::no(format!(
                        "submitted {q:?}, but the results page was cut off before its results reached the browser"
                    ))
                } else {
                    Truth::yes(format!("submitted {q:?}"))
                }
            }
        },
        LayoutSpec::Grid(g) => {
            let decoy = if ledger.last_of_kind("decoy_opened").is_some() {
                "; a decoy page was opened"
            } else {
                ""
            };
            // Identity, not label: the page reports which item its handler selected.
            match ledger.last_of_kind("selected") {
                Some(e) => {
                    let id = e.data["id"].as_str().unwrap_or_default();
                    if id == g.target {
                        Truth::yes(format!("clicked {id}"))
                    } else {
                        Truth::no(format!("clicked {id}, expected {}{decoy}", g.target))
                    }
                }
                None => match ledger.last_of_kind("click") {
                    None => Truth::no(format!("no click reached the page{decoy}")),
                    Some(e) => {
                        let (x, y) = (e.data["x"].as_f64(), e.data["y"].as_f64());
                        match e.data["target"].as_str() {
                            None => Truth::no(format!(
                                "clicked blank space at ({}, {}), expected {}{decoy}",
                                x.unwrap_or(f64::NAN),
                                y.unwrap_or(f64::NAN),
                                g.target
                            )),
                            Some(t) => Truth::no(format!(
                                "clicked {t}, which selected nothing; expected {}{decoy}",
                                g.target
                            )),
                        }
                    }
                },
            }
        }
        LayoutSpec::Form(f) => {
            let committed: Vec<&str> = ledger
                .of_kind("write")
                .filter(|e| e.data["committed"] == true)
                .filter_map(|e| e.data["text"].as_str())
                .collect();
            let mine = committed.iter().filter(|t| **t == f.target).count();
            let keys: Vec<&str> = ledger
                .of_kind("write")
                .filter_map(|e| e.data["key"].as_str())
                .collect();
            match (mine, committed.len()) {
                (1, 1) => Truth::yes(format!("saved {:?} once", f.target)),
                (0, 0) => Truth::no(format!(
                    "no write was committed ({} request(s) reached the server)",
                    keys.len()
                )),
                (0, _) => Truth::no(format!("saved {:?}, expected {:?}", committed[0], f.target)),
                (n, _) => Truth::no(format!(
                    "saved {:?} {n} times (idempotency keys {})",
                    f.target,
                    keys.join(", ")
                )),
            }
        }
        LayoutSpec::Select(s) => match ledger.last_of_kind("option_applied") {
            None => Truth::no(format!(
                "no shipping speed was applied (still {:?}), expected {:?}",
                s.options[s.initial], s.target
            )),
            Some(e) => {
                let o = e.data["option"].as_str().unwrap_or_default();
                if o == s.target {
                    Truth::yes(format!("applied {o:?}"))
                } else {
                    Truth::no(format!("applied {o:?}, expected {:?}", s.target))
                }
            }
        },
        LayoutSpec::Frame(f) => match ledger.last_of_kind("row_selected") {
            None => {
                let clicks = ledger.of_kind("click").count();
                Truth::no(format!(
                    "no row was selected ({clicks} click(s) hit no row), expected {}",
                    f.target
                ))
            }
            Some(e) => {
                let row = e.data["row"].as_str().unwrap_or_default();
                if row == f.target {
                    Truth::yes(format!("selected {row}"))
                } else {
                    Truth::no(format!("selected {row}, expected {}", f.target))
                }
            }
        },
        LayoutSpec::Chart(c) => {
            let mark = c.target_mark();
            let wanted = format!("{}: {}", mark.label, mark.value);
            // The answer counts only against the observation it was given from: the
            // capture it names (the harness records which one the agent had received),
            // else the last capture.
            let answer = ledger.last_of_kind("answer");
            let capture_id = answer.and_then(|e| e.data["capture"].as_u64());
            let value = answer.and_then(|e| e.data["value"].as_str().map(str::to_string));
            match (capture_shows(ledger, capture_id, &wanted), value) {
                (CaptureShows::NoCapture, _) => Truth::no("no observation was captured".into()),
                (CaptureShows::Other(what), Some(a)) => Truth::no(format!(
                    "answered {a:?} from an observation that showed {what}, not {wanted:?}"
                )),
                (CaptureShows::Other(what), None) => Truth::no(format!(
                    "the last observation showed {what} at capture, not {wanted:?}; no answer was given"
                )),
                (CaptureShows::Wanted, None) => Truth::no(format!(
                    "{wanted:?} was visible at capture but no answer was given"
                )),
                (CaptureShows::Wanted, Some(a)) if a.trim() == mark.value.to_string() => {
                    Truth::yes(format!("{wanted:?} was visible at capture; answered {a:?}"))
                }
                (CaptureShows::Wanted, Some(a)) => Truth::no(format!(
                    "{wanted:?} was visible at capture but the answer was {a:?}"
                )),
            }
        }
    }
}

enum CaptureShows {
    NoCapture,
    Wanted,
    Other(String),
}

/// What the tooltip showed during capture `id` (the last capture when `None`). The
/// harness records each capture's page-clock interval; the page records when the tooltip
/// was shown and hidden, on the same clock. The tooltip counts as seen only if it was
/// showing `wanted` for the whole interval (one that appeared mid-capture may be missing
/// from the screenshot).
fn capture_shows(ledger: &Ledger, id: Option<u64>, wanted: &str) -> CaptureShows {
    let capture = match id {
        Some(id) => ledger
            .of_kind("capture")
            .find(|e| e.data["id"].as_u64() == Some(id)),
        None => ledger
            .of_kind("capture")
            .max_by_key(|e| e.data["id"].as_u64().unwrap_or(0)),
    };
    let Some(capture) = capture else {
        return CaptureShows::NoCapture;
    };
    let (Some(begin), Some(end)) = (
        capture.data["begin_ms"].as_f64(),
        capture.data["end_ms"].as_f64(),
    ) else {
        return CaptureShows::Other("a capture without its interval".into());
    };
    // Tooltip changes in page-clock order.
    let mut changes: Vec<(f64, Option<String>)> = ledger
        .events
        .iter()
        .filter_map(|e| {
            let at = e.data["at_ms"].as_f64()?;
            match e.kind.as_str() {
                "tooltip_shown" => Some((
                    at,
                    Some(format!(
                        "{}: {}",
                        e.data["label"].as_str().unwrap_or_default(),
                        e.data["value"]
                    )),
                )),
                "tooltip_hidden" => Some((at, None)),
                _ => None,
            }
        })
        .collect();
    changes.sort_by(|a, b| a.0.total_cmp(&b.0));
    let at_begin = changes
        .iter()
        .rev()
        .find(|(at, _)| *at <= begin)
        .and_then(|(_, text)| text.clone());
    let changed_during = changes.iter().any(|(at, _)| *at > begin && *at <= end);
    match at_begin {
        Some(text) if !changed_during && text == wanted => CaptureShows::Wanted,
        Some(text) if !changed_during => CaptureShows::Other(format!("{text:?}")),
        _ if changed_during => CaptureShows::Other("a tooltip changing mid-capture".into()),
        _ => CaptureShows::Other("no tooltip".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::LedgerEvent;
    use faultline_tasks::TaskKind;
    use serde_json::json;

    fn ledger(events: &[(&str, serde_json::Value)]) -> Ledger {
        Ledger {
            scope: "t".into(),
            events: events
                .iter()
                .enumerate()
                .map(|(i, (k, d))| LedgerEvent {
                    seq: i as u64,
                    server_ms: i as f64,
                    page_ms: None,
                    kind: k.to_string(),
                    data: d.clone(),
                })
                .collect(),
        }
    }

    #[test]
    fn search_needs_the_exact_query() {
        let l = Layout::generate(TaskKind::Search, 0, 3);
        let t = l.target().to_string();
        assert!(judge(&l, &ledger(&[("submitted", json!({"query": t}))])).achieved);
        let leaked = format!("{t}<|im_end|>");
        assert!(!judge(&l, &ledger(&[("submitted", json!({"query": leaked}))])).achieved);
        assert!(!judge(&l, &ledger(&[("typed", json!({"value": t}))])).achieved);
    }

    #[test]
    fn grid_uses_the_selected_identity_not_the_label() {
        let l = Layout::generate(TaskKind::Grid, 0, 3);
        let t = l.target().to_string();
        let ok = ledger(&[
            ("click", json!({"target": null, "x": 1, "y": 2})),
            ("selected", json!({"id": t, "label": "No. 1"})),
        ]);
        assert!(judge(&l, &ok).achieved);
        let promoted = ledger(&[(
            "selected",
            json!({"id": format!("{t} (promoted)"), "label": t}),
        )]);
        assert!(!judge(&l, &promoted).achieved);
        let blank = ledger(&[("click", json!({"target": null, "x": 1, "y": 2}))]);
        let v = judge(&l, &blank);
        assert!(!v.achieved && v.detail.contains("blank"));
        // A click on a button whose handler never ran selects nothing.
        let dead = ledger(&[("click", json!({"target": t, "x": 1, "y": 2}))]);
        let v = judge(&l, &dead);
        assert!(
            !v.achieved && v.detail.contains("selected nothing"),
            "{}",
            v.detail
        );
    }

    #[test]
    fn search_needs_the_results_delivered() {
        let l = Layout::generate(TaskKind::Search, 0, 3);
        let t = l.target().to_string();
        let cut = ledger(&[
            ("submitted", json!({"query": t})),
            ("response_truncated", json!({"bytes_sent": 10})),
        ]);
        let v = judge(&l, &cut);
        assert!(!v.achieved && v.detail.contains("cut off"), "{}", v.detail);
    }

    #[test]
    fn form_needs_exactly_one_committed_write() {
        let l = Layout::generate(TaskKind::Form, 0, 3);
        let t = l.target().to_string();
        let w = |key: &str, committed: bool| {
            (
                "write",
                json!({"text": t, "key": key, "committed": committed}),
            )
        };
        assert!(judge(&l, &ledger(&[w("a", true)])).achieved);
        assert!(
            judge(&l, &ledger(&[w("a", true), w("a", false)])).achieved,
            "a deduplicated retry is fine"
        );
        let twice = judge(&l, &ledger(&[w("a", true), w("b", true)]));
        assert!(
            !twice.achieved && twice.detail.contains("2 times"),
            "{}",
            twice.detail
        );
        assert!(!judge(&l, &ledger(&[])).achieved);
    }

    #[test]
    fn select_needs_the_choice_applied() {
        let l = Layout::generate(TaskKind::Select, 0, 3);
        let t = l.target().to_string();
        assert!(judge(&l, &ledger(&[("option_applied", json!({"option": t}))])).achieved);
        assert!(!judge(&l, &ledger(&[])).achieved);
        assert!(
            !judge(
                &l,
                &ledger(&[("option_applied", json!({"option": "Nope"}))])
            )
            .achieved
        );
    }

    #[test]
    fn chart_needs_the_value_showing_for_the_whole_capture_and_a_right_answer() {
        let l = Layout::generate(TaskKind::Chart, 0, 3);
        let LayoutSpec::Chart(c) = &l.spec else {
            unreachable!()
        };
        let m = c.target_mark();
        let shown = |at: f64| {
            (
                "tooltip_shown",
                json!({"label": m.label, "value": m.value, "at_ms": at}),
            )
        };
        let cap =
            |id: u64, b: f64, e: f64| ("capture", json!({"id": id, "begin_ms": b, "end_ms": e}));
        let answer = |value: &str, capture: Option<u64>| LedgerEvent {
            seq: 9,
            server_ms: 9.0,
            page_ms: None,
            kind: "answer".into(),
            data: json!({"value": value, "capture": capture}),
        };
        // Captured 100-150 ms, tooltip shown at 50: seen; an answer is still required.
        let seen = ledger(&[cap(0, 0.0, 10.0), shown(50.0), cap(1, 100.0, 150.0)]);
        let v = judge(&l, &seen);
        assert!(
            !v.achieved && v.detail.contains("no answer"),
            "{}",
            v.detail
        );
        let mut right = seen.clone();
        right.events.push(answer(&m.value.to_string(), None));
        assert!(judge(&l, &right).achieved, "{}", judge(&l, &right).detail);
        let mut wrong = seen.clone();
        wrong.events.push(answer("-1", None));
        assert!(!judge(&l, &wrong).achieved);
        // The right value, answered from capture 0, which did not show it: a value the
        // agent never observed.
        let mut unobserved = seen.clone();
        unobserved
            .events
            .push(answer(&m.value.to_string(), Some(0)));
        let v = judge(&l, &unobserved);
        assert!(
            !v.achieved && v.detail.contains("from an observation"),
            "{}",
            v.detail
        );
        let mut observed = seen.clone();
        observed.events.push(answer(&m.value.to_string(), Some(1)));
        assert!(judge(&l, &observed).achieved);
        // Captured before the tooltip appeared.
        let early = ledger(&[cap(1, 10.0, 40.0), shown(300.0)]);
        assert!(!judge(&l, &early).achieved);
        // Appeared mid-capture.
        let mid = ledger(&[cap(1, 10.0, 80.0), shown(50.0)]);
        assert!(!judge(&l, &mid).achieved);
        // Shown, then hidden before the capture.
        let hidden = ledger(&[
            shown(5.0),
            ("tooltip_hidden", json!({"label": m.label, "at_ms": 20.0})),
            cap(1, 30.0, 60.0),
        ]);
        assert!(!judge(&l, &hidden).achieved);
        // Another bar's tooltip.
        let other = ledger(&[
            (
                "tooltip_shown",
                json!({"label": "Zzz", "value": 1, "at_ms": 5.0}),
            ),
            cap(1, 30.0, 60.0),
        ]);
        assert!(!judge(&l, &other).achieved);
    }
}
