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
                if q == s.target {
                    Truth::yes(format!("submitted {q:?}"))
                } else {
                    Truth::no(format!("submitted {q:?}, expected {:?}", s.target))
                }
            }
        },
        LayoutSpec::Grid(g) => match ledger.last_of_kind("click") {
            None => Truth::no("no click reached the page".into()),
            Some(e) => {
                let (x, y) = (e.data["x"].as_f64(), e.data["y"].as_f64());
                match e.data["target"].as_str() {
                    Some(t) if t == g.target => Truth::yes(format!("clicked {t}")),
                    Some(t) => Truth::no(format!("clicked {t}, expected {}", g.target)),
                    None => Truth::no(format!(
                        "clicked blank space at ({}, {}), expected {}",
                        x.unwrap_or(f64::NAN),
                        y.unwrap_or(f64::NAN),
                        g.target
                    )),
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
            let shown = last_capture_shows(ledger, &wanted);
            let answer = ledger
                .last_of_kind("answer")
                .and_then(|e| e.data["value"].as_str().map(str::to_string));
            match (shown, answer) {
                (CaptureShows::NoCapture, _) => Truth::no("no observation was captured".into()),
                (CaptureShows::Other(what), _) => Truth::no(format!(
                    "the last observation showed {what} at capture, not {wanted:?}"
                )),
                (CaptureShows::Wanted, None) => {
                    Truth::yes(format!("{wanted:?} was visible at capture"))
                }
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

/// Whether the tooltip text was `wanted` at both the start and the end of the last
/// capture (a tooltip that appeared mid-capture does not count as seen).
fn last_capture_shows(ledger: &Ledger, wanted: &str) -> CaptureShows {
    let Some(last_id) = ledger
        .of_kind("capture")
        .filter_map(|e| e.data["id"].as_u64())
        .max()
    else {
        return CaptureShows::NoCapture;
    };
    let phases: Vec<&serde_json::Value> = ledger
        .of_kind("capture")
        .filter(|e| e.data["id"].as_u64() == Some(last_id))
        .map(|e| &e.data)
        .collect();
    let texts: Vec<Option<&str>> = phases
        .iter()
        .map(|d| {
            if d["tooltip_visible"].as_bool() == Some(true) {
                d["tooltip_text"].as_str()
            } else {
                None
            }
        })
        .collect();
    if texts.len() >= 2 && texts.iter().all(|t| *t == Some(wanted)) {
        CaptureShows::Wanted
    } else if texts.iter().all(|t| t.is_none()) {
        CaptureShows::Other("no tooltip".into())
    } else {
        CaptureShows::Other(format!("{texts:?}"))
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
    fn grid_uses_the_last_click() {
        let l = Layout::generate(TaskKind::Grid, 0, 3);
        let t = l.target().to_string();
        let ok = ledger(&[
            ("click", json!({"target": null, "x": 1, "y": 2})),
            ("click", json!({"target": t, "x": 1, "y": 2})),
        ]);
        assert!(judge(&l, &ok).achieved);
        let blank = ledger(&[("click", json!({"target": null, "x": 1, "y": 2}))]);
        let v = judge(&l, &blank);
        assert!(!v.achieved && v.detail.contains("blank"));
    }

    #[test]
    fn chart_needs_the_value_visible_at_both_capture_marks_and_a_right_answer() {
        let l = Layout::generate(TaskKind::Chart, 0, 3);
        let LayoutSpec::Chart(c) = &l.spec else {
            unreachable!()
        };
        let m = c.target_mark();
        let text = format!("{}: {}", m.label, m.value);
        let cap = |id: u64, phase: &str, vis: bool| {
            (
                "capture",
                json!({"id": id, "phase": phase, "tooltip_visible": vis, "tooltip_text": if vis { Some(text.clone()) } else { None }}),
            )
        };
        let seen = ledger(&[cap(0, "begin", false), cap(0, "end", false), cap(1, "begin", true), cap(1, "end", true)]);
        assert!(judge(&l, &seen).achieved);
        let mut answered = seen.clone();
        answered.events.push(LedgerEvent {
            seq: 9,
            server_ms: 9.0,
            page_ms: None,
            kind: "answer".into(),
            data: json!({"value": "-1"}),
        });
        assert!(!judge(&l, &answered).achieved);
        let early = ledger(&[cap(1, "begin", false), cap(1, "end", false)]);
        assert!(!judge(&l, &early).achieved);
        let mid = ledger(&[cap(1, "begin", false), cap(1, "end", true)]);
        assert!(!judge(&l, &mid).achieved);
    }
}
