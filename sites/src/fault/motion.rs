//! The page moves under the agent: content shifted or reordered just before the agent
//! acts, a responsive layout, items re-rendered on press, a live feed that keeps the page
//! changing.

use crate::pages::Extras;
use faultline_tasks::layout::{GridLayout, LayoutSpec};
use faultline_tasks::Layout;
use rand::seq::SliceRandom;

/// Moves the content down by `dy` just before the agent acts.
pub(super) fn shift_before_act(x: &mut Extras, dy: &f64) {
    x.script.push_str(&format!(
        r#"window.__fl_before_act = function () {{
  if (window.__fl_shifted) return;
  window.__fl_shifted = true;
  Array.prototype.forEach.call(document.body.children, function (el) {{ if (el.tagName !== 'SCRIPT') el.style.translate = '0 {dy}px'; }});
  __fl.witness('shifted', {{ dy: {dy} }});
}};
"#
    ));
}

/// Reorders the grid's items just before the agent acts (a seeded permutation that
/// moves the target).
pub(super) fn reorder_before_act(x: &mut Extras, layout: &Layout, seed: &u64) {
    if let LayoutSpec::Grid(g) = &layout.spec {
        let perm = reorder(g, *seed);
        let perm_js: Vec<String> = perm.iter().map(|i| i.to_string()).collect();
        x.script.push_str(&format!(
            r#"window.__fl_before_act = function () {{
  if (window.__fl_reordered) return;
  window.__fl_reordered = true;
  var perm = [{perm}];
  var buttons = Array.prototype.slice.call(document.querySelectorAll('button.item'));
  var was = buttons.map(function (b) {{ return [b.dataset.id, b.textContent]; }});
  var target = {target};
  var slot = was.findIndex(function (w) {{ return w[0] === target; }});
  buttons.forEach(function (b, i) {{ b.dataset.id = was[perm[i]][0]; b.textContent = was[perm[i]][1]; }});
  __fl.witness('reordered', {{ now_in_target_box: buttons[slot].dataset.id }});
}};
"#,
            perm = perm_js.join(","),
            target = serde_json::to_string(&g.target).expect("string"),
        ));
    }
}

/// A responsive layout: the board is centred instead of where the layout put it.
pub(super) fn responsive(x: &mut Extras) {
    x.style
        .push_str("#board { left: calc(50% - 600px) !important; }\n");
}

/// Re-renders the grid's items when one is pressed, so the press and the click meet
/// different elements.
pub(super) fn rerender_on_press(x: &mut Extras) {
    x.script.push_str(
        r#"document.addEventListener('pointerdown', function (e) {
  var b = e.target.closest ? e.target.closest('button.item') : null;
  if (!b) return;
  document.querySelectorAll('button.item').forEach(function (o) { o.replaceWith(o.cloneNode(true)); });
  __fl.witness('rerendered', { pressed: b.dataset.id });
}, true);
"#,
    );
}

/// A live region that updates every `interval_ms`.
pub(super) fn live_feed(x: &mut Extras, interval_ms: &u64) {
    x.body.push_str(
        r#"<div id="fl-live" aria-live="off" style="position:fixed; right:8px; bottom:8px; z-index:5; pointer-events:none; font:12px sans-serif; color:#555; background:#f4f4f4; padding:2px 6px; border-radius:3px">Live: 0 updates</div>"#,
    );
    x.script.push_str(&format!(
        r#"(function () {{
  var el = document.getElementById('fl-live'), n = 0;
  setInterval(function () {{ n++; el.textContent = 'Live: ' + n + ' updates, ' + (performance.now() / 1000).toFixed(2) + ' s'; el.dataset.n = String(n); }}, {interval_ms});
  __fl.witness('live_feed', {{ interval_ms: {interval_ms} }});
}})();
"#
    ));
}

/// A permutation of the grid's items that moves the target (seeded).
fn reorder(g: &GridLayout, seed: u64) -> Vec<usize> {
    let n = g.items.len();
    let mut perm: Vec<usize> = (0..n).collect();
    let mut rng = faultline_tasks::seed::rng(seed);
    perm.shuffle(&mut rng);
    let t = g
        .items
        .iter()
        .position(|i| i.label == g.target)
        .unwrap_or(0);
    if n > 1 && perm[t] == t {
        perm.swap(t, (t + 1) % n);
    }
    perm
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reordering_always_moves_the_target() {
        for i in 0..30 {
            let l = Layout::for_root(1, faultline_tasks::TaskKind::Grid, i);
            let LayoutSpec::Grid(g) = &l.spec else {
                unreachable!()
            };
            let t = g.items.iter().position(|it| it.label == g.target).unwrap();
            for seed in 0..5 {
                assert_ne!(reorder(g, seed)[t], t);
            }
        }
    }
}
