//! The chart task's page: a bar chart whose tooltip appears after a hover delay. The
//! numbers live in script data until the tooltip shows one. Until then a hover changes
//! nothing on the page, in the DOM or in pixels; the `semantic.hover_highlight` anomaly
//! ([`PageMod::HoverHighlight`]) lights the hovered bar up at once instead.

use super::{js_string, SiteTask};
use crate::anomalies;
use crate::ledger::Ledger;
use crate::pages::{esc, shell};
use crate::truth::Truth;
use faultline_faults::site::PageMod;
use faultline_tasks::layout::ChartLayout;
use faultline_tasks::Layout;

impl SiteTask for ChartLayout {
    const EVENTS: &'static [&'static str] = &["tooltip_shown", "tooltip_hidden"];

    fn page(&self, scope: &str, layout: &Layout, mods: &[PageMod]) -> String {
        chart_page(scope, layout, self, mods)
    }

    /// The target's value must have been showing for the whole capture the agent answered
    /// from, and the answer must be that value.
    fn validate(&self, ledger: &Ledger) -> Truth {
        let c = self;
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

    /// The bar above the axis label whose text is the target (`.axis` and `.bar`, as
    /// [`chart_page`] writes them).
    fn locate_js(&self) -> Option<String> {
        let target = js_string(&self.target);
        Some(format!(
            "(() => {{ const label = Array.from(document.querySelectorAll('.axis')).find((e) => e.textContent.trim() === {target});
               if (!label) return null; const lr = label.getBoundingClientRect(); const cx = lr.left + lr.width / 2;
               const bar = Array.from(document.querySelectorAll('.bar')).find((b) => {{ const r = b.getBoundingClientRect(); return r.left <= cx && cx <= r.right; }});
               if (!bar) return null; const r = bar.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
        ))
    }
}

fn chart_page(scope: &str, layout: &Layout, c: &ChartLayout, mods: &[PageMod]) -> String {
    let p = &c.plot;
    let locale = mods.iter().find_map(|m| match m {
        PageMod::Locale { locale } => Some(locale.as_str()),
        _ => None,
    });
    let highlight = mods.iter().any(|m| matches!(m, PageMod::HoverHighlight));
    let shown = |label: &str| month_label(label, locale);
    let bars: String = c
        .marks
        .iter()
        .enumerate()
        .map(|(i, m)| {
            format!(
                r#"<div class="bar" data-i="{i}" style="left:{x}px; top:{y}px; width:{w}px; height:{h}px"></div>
<span class="axis" style="left:{x}px; top:{ay}px; width:{w}px">{l}</span>"#,
                x = m.rect.x,
                y = m.rect.y,
                w = m.rect.width,
                h = m.rect.height,
                ay = p.y + p.height + 6.0,
                l = esc(&shown(&m.label))
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    let body = format!(
        r#"<h1>Monthly sales</h1>
<div class="plot" style="left:{x}px; top:{y}px; width:{w}px; height:{h}px"></div>
{bars}
<div id="tip" role="tooltip" hidden></div>"#,
        x = p.x,
        y = p.y,
        w = p.width,
        h = p.height,
    );
    let mut style = r#".plot { position: absolute; box-sizing: border-box; border-left: 2px solid #444; border-bottom: 2px solid #444; }
.bar { position: absolute; background: #7aa6d8; }
.axis { position: absolute; text-align: center; font-size: 14px; }
#tip { position: absolute; padding: 6px 10px; background: #222; color: #fff; border-radius: 4px; font-size: 15px; white-space: nowrap; }"#
        .to_string();
    // The anomaly: the bar under the pointer changes class and colour the moment the
    // pointer enters it, and the page witnesses that it did.
    let (enter, leave) = if highlight {
        style.push_str("\n.bar.hot { background: #f0a030; }");
        (
            "bar.classList.add('hot');\n    __fl.witness('highlighted', { label: m[0], at_ms: performance.now() });\n    ",
            "bar.classList.remove('hot');\n    ",
        )
    } else {
        ("", "")
    };
    // [canonical label, value, label as shown, value as shown]: the ledger gets the
    // canonical pair, the tooltip the shown one.
    let data: Vec<String> = c
        .marks
        .iter()
        .map(|m| {
            format!(
                "[\"{}\",{},\"{}\",\"{}\"]",
                m.label,
                m.value,
                shown(&m.label),
                number(m.value, locale)
            )
        })
        .collect();
    let script = format!(
        r#"var marks = [{data}];
var delay = {delay};
var tip = document.getElementById('tip');
var timer = null;
document.querySelectorAll('.bar').forEach(function (bar) {{
  var m = marks[Number(bar.dataset.i)];
  bar.addEventListener('mouseenter', function () {{
    {enter}clearTimeout(timer);
    timer = setTimeout(function show() {{
      // The harness holds the tooltip while it captures early (the capture-before-
      // tooltip fault), so the order cannot depend on how loaded the machine is.
      if (window.__fl_hold) {{ window.__fl_hold.then(show); return; }}
      var r = bar.getBoundingClientRect();
      tip.textContent = m[2] + ': ' + m[3];
      tip.style.left = (r.left) + 'px';
      tip.style.top = Math.max(0, r.top - 40) + 'px';
      tip.hidden = false;
      var now = performance.now();
      tip.dataset.shownAt = String(now);
      __fl.send('tooltip_shown', {{ label: m[0], value: m[1], at_ms: now }});
    }}, delay);
  }});
  bar.addEventListener('mouseleave', function () {{
    {leave}clearTimeout(timer);
    if (!tip.hidden) {{ tip.hidden = true; __fl.send('tooltip_hidden', {{ label: m[0], at_ms: performance.now() }}); }}
  }});
}});"#,
        data = data.join(","),
        delay = c.tooltip_delay_ms
    );
    let x = anomalies::extras(layout, mods);
    shell(scope, "Monthly sales", &style, &body, &script, &x)
}

/// A month's abbreviation as a locale shows it.
fn month_label(label: &str, locale: Option<&str>) -> String {
    const EN: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    const DE: [&str; 12] = [
        "Jan.", "Feb.", "März", "Apr.", "Mai", "Juni", "Juli", "Aug.", "Sept.", "Okt.", "Nov.",
        "Dez.",
    ];
    match (locale, EN.iter().position(|m| *m == label)) {
        (Some("de-DE"), Some(i)) => DE[i].to_string(),
        _ => label.to_string(),
    }
}

/// A value as a locale writes it (`57` or `57,0`).
fn number(v: u32, locale: Option<&str>) -> String {
    match locale {
        Some("de-DE") => format!("{v},0"),
        _ => v.to_string(),
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
    use crate::task::judge;
    use crate::task::tests::ledger;
    use faultline_tasks::task::LayoutSpec;
    use faultline_tasks::{Layout, TaskKind};
    use serde_json::json;

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
    #[test]
    fn german_months_and_numbers() {
        assert_eq!(month_label("Mar", Some("de-DE")), "März");
        assert_eq!(month_label("Mar", None), "Mar");
        assert_eq!(number(57, Some("de-DE")), "57,0");
    }
}
