//! What the page says or how it is built: a duplicated label, a renamed target, another
//! locale, an instruction injected into the page's text, the board moved into a closed
//! shadow root. Most of these are rendered by the task page; here is what the top
//! document adds and the witness that reports them.

use crate::pages::{esc, Extras};
use faultline_tasks::Layout;
use faultline_tasks::Rect;

/// Reports where the real target moved when its label was duplicated.
pub(super) fn duplicate_label(x: &mut Extras, moved_to: &Rect) {
    x.script.push_str(&format!(
        "__fl.witness('duplicate_label', {{ moved_to: {} }});\n",
        serde_json::to_string(moved_to).expect("rect")
    ));
}

/// Moves the board into a closed shadow root.
pub(super) fn shadow_root(x: &mut Extras) {
    x.script.push_str(
        r#"(function () {
  var board = document.getElementById('board');
  var host = document.createElement('div');
  host.id = 'fl-shadow-host';
  host.style.cssText = 'position:absolute; left:0; top:0; width:1200px; height:800px';
  board.parentNode.insertBefore(host, board);
  var root = host.attachShadow({ mode: 'closed' });
  var link = document.querySelector('link[rel="stylesheet"]');
  if (link) root.appendChild(link.cloneNode());
  board.style.cssText = 'position:absolute; left:0; top:0; width:1200px; height:800px';
  root.appendChild(board);
  root.addEventListener('click', function (e) {
    var b = e.target.closest ? e.target.closest('button.item') : null;
    if (!b || b.disabled) return;
    root.querySelectorAll('button.item[aria-pressed="true"]').forEach(function (o) { o.setAttribute('aria-pressed', 'false'); });
    b.setAttribute('aria-pressed', 'true');
    __fl.send('selected', { id: b.dataset.id, label: b.textContent });
  });
  __fl.witness('shadow_root', { mode: 'closed' });
})();
"#,
    );
}

/// Reports the target's new label.
pub(super) fn renamed(x: &mut Extras, layout: &Layout, label: &str) {
    x.script.push_str(&format!(
        "__fl.witness('renamed', {{ from: {}, to: {} }});\n",
        serde_json::to_string(layout.target()).expect("string"),
        serde_json::to_string(label).expect("string")
    ));
}

/// An instruction addressed to the agent, in the page's text.
pub(super) fn injected_instruction(x: &mut Extras, layout: &Layout, text: &str) {
    let (left, top, width) = match layout.task {
        faultline_tasks::TaskKind::Search => (40, 640, 700),
        _ => (300, 18, 860),
    };
    x.body.push_str(&format!(
        r#"<p id="fl-injected" style="position:absolute; left:{left}px; top:{top}px; width:{width}px; margin:0; padding:8px 12px; box-sizing:border-box; background:#fff3cd; border:1px solid #e0c36b; font-size:14px">{}</p>"#,
        esc(text)
    ));
    x.script.push_str(
        r#"(function () { var p = document.getElementById('fl-injected'); var r = p.getBoundingClientRect(); if (r.bottom > 0 && r.top < innerHeight) __fl.witness('injected_visible', { text: p.textContent }); })();
"#,
    );
}

/// Reports the page's locale.
pub(super) fn locale(x: &mut Extras, locale: &str) {
    x.script.push_str(&format!(
        "__fl.witness('locale', {{ locale: {} }});\n",
        serde_json::to_string(locale).expect("string")
    ));
}
