//! The select task's page: a native `<select>` whose choice the page applies to an
//! order summary.

use super::SiteTask;
use crate::anomalies;
use crate::ledger::Ledger;
use crate::pages::{esc, shell};
use crate::truth::Truth;
use faultline_faults::site::PageMod;
use faultline_tasks::layout::SelectLayout;
use faultline_tasks::Layout;

impl SiteTask for SelectLayout {
    const EVENTS: &'static [&'static str] = &["option_applied"];

    fn page(&self, scope: &str, layout: &Layout, mods: &[PageMod]) -> String {
        select_page(scope, layout, self, mods)
    }

    /// The option the page applied last must be the target.
    fn validate(&self, ledger: &Ledger) -> Truth {
        let s = self;
        match ledger.last_of_kind("option_applied") {
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
        }
    }

    /// The menu (`#speed`, as [`select_page`] writes it).
    fn locate_js(&self) -> Option<String> {
        Some("(() => { const s = document.getElementById('speed'); if (!s) return null; const r = s.getBoundingClientRect(); return [r.left + r.width / 2, r.top + r.height / 2]; })()".to_string())
    }
}

fn select_page(scope: &str, layout: &Layout, s: &SelectLayout, mods: &[PageMod]) -> String {
    let c = &s.control;
    let options: String = s
        .options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            format!(
                "<option value=\"{v}\"{sel}>{v}</option>",
                v = esc(o),
                sel = if i == s.initial { " selected" } else { "" }
            )
        })
        .collect();
    let body = format!(
        r#"<h1>Checkout</h1>
<p style="position:absolute; left:40px; top:70px; margin:0">One parcel, 2.4 kg.</p>
<label for="speed" style="position:absolute; left:{x}px; top:{ly}px">Shipping speed</label>
<select id="speed" name="speed" style="position:absolute; left:{x}px; top:{y}px; width:{w}px; height:{h}px; font-size:16px">{options}</select>
<p id="summary" style="position:absolute; left:{x}px; top:{sy}px; margin:0">Shipping: {initial}</p>"#,
        x = c.x,
        y = c.y,
        ly = c.y - 22.0,
        w = c.width,
        h = c.height,
        sy = c.y + c.height + 14.0,
        initial = esc(&s.options[s.initial]),
    );
    let script = r#"var speed = document.getElementById('speed');
var summary = document.getElementById('summary');
speed.addEventListener('change', function () {
  summary.textContent = 'Shipping: ' + speed.value;
  __fl.send('option_applied', { option: speed.value });
});"#;
    let x = anomalies::extras(layout, mods);
    shell(scope, "Checkout", "", &body, script, &x)
}

#[cfg(test)]
mod tests {
    use crate::task::judge;
    use crate::task::tests::ledger;
    use faultline_tasks::{Layout, TaskKind};
    use serde_json::json;

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
}
