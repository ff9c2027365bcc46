//! The quiet task's page: a form whose field only takes focus, a long page scrolled to a
//! section, or a paragraph one word of which is selected. The page's markup never
//! changes; its script records the effect in the ledger (`focus`, `scrolled`,
//! `selected`), which is what the truth reads. Each event carries the page's own count
//! `n`: the requests of one page race each other to the server, so the last event to
//! arrive need not be the last the page sent (a scroll and its reset, a focus and its
//! blur are a few milliseconds apart).

use super::{js_string, SiteTask};
use crate::anomalies;
use crate::ledger::{Ledger, LedgerEvent};
use crate::pages::{esc, shell};
use crate::truth::Truth;
use faultline_faults::site::PageMod;
use faultline_tasks::layout::{QuietEffect, QuietLayout};
use faultline_tasks::Layout;

impl SiteTask for QuietLayout {
    const EVENTS: &'static [&'static str] = &["focus", "scrolled", "selected"];

    fn page(&self, scope: &str, layout: &Layout, mods: &[PageMod]) -> String {
        quiet_page(scope, layout, self, mods)
    }

    /// The effect as the page last recorded it: the target field focused (and not left
    /// since), the target section in view at the last scroll, or exactly the target word
    /// selected.
    fn validate(&self, ledger: &Ledger) -> Truth {
        let t = &self.target;
        match self.effect {
            QuietEffect::Focus => match latest(ledger, "focus") {
                None => Truth::no(format!("no field took focus, expected {t:?}")),
                Some(e) => match e.data["field"].as_str().unwrap_or_default() {
                    "" => Truth::no(format!("the focus left the fields, expected {t:?}")),
                    f if f == t => Truth::yes(format!("{f:?} has the focus")),
                    f => Truth::no(format!("{f:?} has the focus, expected {t:?}")),
                },
            },
            QuietEffect::Scroll => match latest(ledger, "scrolled") {
                None => Truth::no(format!("the page never scrolled, expected {t:?} in view")),
                Some(e) => {
                    let y = e.data["y"].as_i64().unwrap_or_default();
                    let in_view = e.data["in_view"]
                        .as_array()
                        .is_some_and(|v| v.iter().any(|s| s.as_str() == Some(t)));
                    if in_view {
                        Truth::yes(format!("scrolled to {y}: {t:?} in view"))
                    } else {
                        Truth::no(format!("scrolled to {y}: {t:?} not in view"))
                    }
                }
            },
            QuietEffect::Select => match latest(ledger, "selected") {
                None => Truth::no(format!("nothing was selected, expected {t:?}")),
                Some(e) => match e.data["text"].as_str().unwrap_or_default() {
                    s if s == t => Truth::yes(format!("selected {s:?}")),
                    "" => Truth::no(format!("the selection was cleared, expected {t:?}")),
                    s => Truth::no(format!("selected {s:?}, expected {t:?}")),
                },
            },
        }
    }

    /// The field (`#<id>`), the section's heading or the word's `<span>`, as
    /// [`quiet_page`] writes them; a heading's point is in page coordinates (the page is
    /// unscrolled when the oracle looks).
    fn locate_js(&self) -> Option<String> {
        let selector = match self.effect {
            QuietEffect::Focus => format!("#{}", field_id(&self.target)),
            QuietEffect::Scroll => format!("h2[data-section={}]", js_string(&self.target)),
            QuietEffect::Select => format!("span.w[data-word={}]", js_string(&self.target)),
        };
        Some(format!(
            "(() => {{ const e = document.querySelector({sel}); if (!e) return null; const r = e.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; }})()",
            sel = js_string(&selector)
        ))
    }
}

/// The event of `kind` the page sent last: the highest page count `n`, then the latest
/// to arrive.
fn latest<'a>(ledger: &'a Ledger, kind: &'a str) -> Option<&'a LedgerEvent> {
    ledger
        .of_kind(kind)
        .max_by_key(|e| (e.data["n"].as_u64().unwrap_or(0), e.seq))
}

/// The page's counted send: every effect event carries `n`, its place in the page's
/// own order.
const SEND_JS: &str = "var quietCount = 0;\nfunction quietSend(kind, data) { data.n = ++quietCount; __fl.send(kind, data); }\n";

/// A field's id (and name): its label, lowercased.
fn field_id(label: &str) -> String {
    label.to_ascii_lowercase()
}

fn quiet_page(scope: &str, layout: &Layout, q: &QuietLayout, mods: &[PageMod]) -> String {
    let (title, body, script) = match q.effect {
        QuietEffect::Focus => {
            let fields: String = q
                .items
                .iter()
                .map(|i| {
                    let r = &i.rect;
                    format!(
                        r#"<label for="{id}" style="position:absolute; left:{lx}px; top:{ly}px">{l}</label>
<input class="field" id="{id}" name="{id}" type="text" data-label="{l}" style="position:absolute; left:{x}px; top:{y}px; width:{w}px; height:{h}px; font-size:16px; box-sizing:border-box">
"#,
                        id = field_id(&i.label),
                        l = esc(&i.label),
                        lx = r.x - 130.0,
                        ly = r.y + 6.0,
                        x = r.x,
                        y = r.y,
                        w = r.width,
                        h = r.height,
                    )
                })
                .collect();
            let body = format!("<h1>Contact details</h1>\n{fields}");
            // A focus that moves away for good is recorded; a window losing focus is
            // not (the element stays the document's active one).
            let script = r#"document.addEventListener('focusin', function (e) {
  if (e.target.classList && e.target.classList.contains('field')) quietSend('focus', { field: e.target.dataset.label });
});
document.addEventListener('focusout', function (e) {
  var left = e.target;
  if (!(left.classList && left.classList.contains('field'))) return;
  setTimeout(function () {
    var now = document.activeElement;
    if (now !== left && !(now && now.classList && now.classList.contains('field'))) quietSend('focus', { field: '' });
  }, 0);
});"#;
            ("Contact details", body, script)
        }
        QuietEffect::Scroll => {
            let sections: String = q
                .items
                .iter()
                .map(|i| {
                    let r = &i.rect;
                    format!(
                        r#"<h2 class="section" data-section="{l}" style="position:absolute; left:{x}px; top:{y}px; width:{w}px; height:{h}px; margin:0; font-size:24px">{l}</h2>
<p style="position:absolute; left:{x}px; top:{py}px; width:560px; margin:0">What our customers should know about {lower}: the details, the exceptions and whom to ask.</p>
"#,
                        l = esc(&i.label),
                        lower = esc(&i.label.to_lowercase()),
                        x = r.x,
                        y = r.y,
                        w = r.width,
                        h = r.height,
                        py = r.y + r.height + 16.0,
                    )
                })
                .collect();
            let body = format!(
                "<h1>Help centre</h1>\n<div style=\"position:absolute; left:0; top:0; width:1px; height:{}px\"></div>\n{sections}",
                q.page_height()
            );
            let script = r#"var heads = Array.prototype.slice.call(document.querySelectorAll('h2.section'));
function inView() {
  return heads.filter(function (h) { var r = h.getBoundingClientRect(); return r.top >= 0 && r.bottom <= window.innerHeight; })
    .map(function (h) { return h.dataset.section; });
}
var lastY = 0;
window.addEventListener('scroll', function () {
  var y = Math.round(window.scrollY);
  if (y === lastY) return;
  lastY = y;
  quietSend('scrolled', { y: y, in_view: inView() });
});"#;
            ("Help centre", body, script)
        }
        QuietEffect::Select => {
            let r = &q.items[0].rect;
            let words: Vec<String> = q
                .items
                .iter()
                .map(|i| {
                    format!(
                        "<span class=\"w\" data-word=\"{w}\">{w}</span>",
                        w = esc(&i.label)
                    )
                })
                .collect();
            let body = format!(
                r#"<h1>Reading</h1>
<p id="para" style="position:absolute; left:{x}px; top:{y}px; width:{w}px; margin:0; font-size:20px; line-height:1.6">{words}</p>"#,
                x = r.x,
                y = r.y,
                w = r.width,
                words = words.join(" "),
            );
            let script = r#"var lastSelected = '';
document.addEventListener('selectionchange', function () {
  var t = String(window.getSelection()).trim();
  if (t === lastSelected) return;
  lastSelected = t;
  quietSend('selected', { text: t });
});"#;
            ("Reading", body, script)
        }
    };
    let x = anomalies::extras(layout, mods);
    shell(scope, title, "", &body, &format!("{SEND_JS}{script}"), &x)
}

#[cfg(test)]
mod tests {
    use crate::task::judge;
    use crate::task::tests::ledger;
    use faultline_tasks::layout::{LayoutSpec, QuietEffect};
    use faultline_tasks::{Layout, TaskKind};
    use serde_json::json;

    #[test]
    fn each_effect_is_judged_by_what_the_page_recorded_last() {
        for index in 0..3 {
            let l = Layout::generate(TaskKind::Quiet, index, 7);
            let LayoutSpec::Quiet(q) = &l.spec else {
                panic!("a quiet layout")
            };
            let t = q.target.clone();
            let other = q.items.iter().find(|i| i.label != t).unwrap().label.clone();
            let (kind, yes, lost, wrong) = match q.effect {
                QuietEffect::Focus => (
                    "focus",
                    json!({"field": t}),
                    json!({"field": ""}),
                    json!({"field": other}),
                ),
                QuietEffect::Scroll => (
                    "scrolled",
                    json!({"y": 900, "in_view": [t]}),
                    json!({"y": 0, "in_view": [other]}),
                    json!({"y": 300, "in_view": []}),
                ),
                QuietEffect::Select => (
                    "selected",
                    json!({"text": t}),
                    json!({"text": ""}),
                    json!({"text": other}),
                ),
            };
            assert!(judge(&l, &ledger(&[(kind, yes.clone())])).achieved);
            assert!(!judge(&l, &ledger(&[(kind, yes.clone()), (kind, lost.clone())])).achieved);
            assert!(!judge(&l, &ledger(&[(kind, wrong)])).achieved);
            assert!(!judge(&l, &ledger(&[])).achieved);
            // The page's own order wins over the order of arrival.
            let mut yes = yes;
            let mut lost = lost;
            yes["n"] = json!(1);
            lost["n"] = json!(2);
            assert!(!judge(&l, &ledger(&[(kind, lost.clone()), (kind, yes.clone())])).achieved);
            lost["n"] = json!(1);
            yes["n"] = json!(2);
            assert!(judge(&l, &ledger(&[(kind, yes), (kind, lost)])).achieved);
        }
    }
}
