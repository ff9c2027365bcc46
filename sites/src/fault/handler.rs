//! The click lands but the page does not do what it shows: a disabled control, a handler
//! that throws, a click intercepted (or a main thread hung after it), a `<select>` whose
//! change is ignored, an optimistic "Saved!" rolled back, a fresh idempotency key on every
//! click.

use crate::pages::Extras;
use faultline_tasks::Layout;

/// Reports where the disabled control is (the task page renders it disabled).
pub(super) fn disabled(x: &mut Extras, layout: &Layout) {
    let selector = match layout.task {
        faultline_tasks::TaskKind::Form => "#save".to_string(),
        _ => format!(
            "button.item[data-id={}]",
            serde_json::to_string(layout.target()).expect("string")
        ),
    };
    x.script.push_str(&format!(
        r#"(function () {{ var c = document.querySelector({sel}); if (c && c.disabled) {{ var r = c.getBoundingClientRect(); __fl.witness('disabled', {{ x: r.left, y: r.top, width: r.width, height: r.height }}); }} }})();
"#,
        sel = serde_json::to_string(&selector).expect("string")
    ));
}

/// The control's click handler throws.
pub(super) fn handler_throws(x: &mut Extras, layout: &Layout) {
    let selector = match layout.task {
        faultline_tasks::TaskKind::Form => "#save",
        _ => "button.item",
    };
    x.script.push_str(&format!(
        r#"document.addEventListener('click', function (e) {{
  var c = e.target.closest ? e.target.closest({sel}) : null;
  if (!c) return;
  e.stopImmediatePropagation();
  __fl.witness('threw', {{ error: "TypeError: Cannot read properties of undefined (reading 'id')" }});
  throw new TypeError("Cannot read properties of undefined (reading 'id')");
}}, true);
"#,
        sel = serde_json::to_string(selector).expect("string")
    ));
}

/// The click never reaches the page's handler; with `hang_ms`, the main thread then
/// hangs.
pub(super) fn intercept_click(x: &mut Extras, layout: &Layout, hang_ms: Option<u64>) {
    let selector = match layout.task {
        faultline_tasks::TaskKind::Form => "#save",
        _ => "button.item",
    };
    // The click never reaches the page's handler; what follows it (the
    // renderer crashed by the harness, or a hung main thread) is reported
    // first, on a keepalive request that outlives the page.
    let after = match hang_ms {
        // The hang is a synchronous request the server holds (it records
        // the witness on arrival): the main thread blocks inside the click's
        // own dispatch, so the harness's click call is the one that gets no
        // answer, whatever the machine's load, and no CPU burns while it
        // waits. Chromium sends the ledger's click request, started just
        // before, before the thread blocks.
        Some(ms) => format!(
            "var x = new XMLHttpRequest();\n  x.open('POST', '/s/' + __fl.scope + '/hang', false);\n  x.setRequestHeader('content-type', 'application/json');\n  try {{ x.send(JSON.stringify({{ kind: 'hung', page_ms: performance.now(), data: {{ ms: {ms} }} }})); }} catch (err) {{}}"
        ),
        None => "__fl.witness('click_intercepted', {});".to_string(),
    };
    x.script.push_str(&format!(
        r#"document.addEventListener('click', function (e) {{
  var c = e.target.closest ? e.target.closest({sel}) : null;
  if (!c) return;
  e.stopImmediatePropagation();
  {after}
}}, true);
"#,
        sel = serde_json::to_string(selector).expect("string")
    ));
}

/// The `<select>`'s change and input events are swallowed.
pub(super) fn select_ignored(x: &mut Extras) {
    x.script.push_str(
        r#"['change', 'input'].forEach(function (kind) {
  document.addEventListener(kind, function (e) {
    if (e.target && e.target.id === 'speed') { e.stopImmediatePropagation(); __fl.witness('change_swallowed', { event: kind, value: e.target.value }); }
  }, true);
});
"#,
    );
}

/// A focus, a scroll or a selection is undone on the next task, each reported once as
/// it first happens. The page's own listeners (registered before) still record the
/// effect and then its loss.
pub(super) fn undo_effect(x: &mut Extras) {
    x.script.push_str(
        r#"(function () {
  var told = {};
  function undone(kind, data) { if (told[kind]) return; told[kind] = true; __fl.witness('effect_undone', Object.assign({ effect: kind }, data)); }
  document.addEventListener('focusin', function (e) {
    var f = e.target;
    if (!(f && f.classList && f.classList.contains('field'))) return;
    setTimeout(function () { f.blur(); undone('focus', { field: f.dataset.label }); }, 0);
  });
  window.addEventListener('scroll', function () {
    var y = Math.round(window.scrollY);
    if (y === 0) return;
    setTimeout(function () { window.scrollTo(0, 0); undone('scroll', { y: y }); }, 0);
  });
  document.addEventListener('selectionchange', function () {
    var t = String(window.getSelection()).trim();
    if (!t) return;
    setTimeout(function () { window.getSelection().removeAllRanges(); undone('selection', { text: t }); }, 0);
  });
})();
"#,
    );
}

/// The form shows "Saved!" at once and rolls back `rollback_ms` after a failed save.
pub(super) fn optimistic_toast(x: &mut Extras, rollback_ms: &u64) {
    x.script.push_str(&format!(
        r#"document.addEventListener('click', function (e) {{
  if (!(e.target.closest && e.target.closest('#save'))) return;
  e.stopImmediatePropagation();
  var text = note.value.trim();
  if (!text) return;
  var li = listNote(text);
  statusLine.textContent = 'Saved!';
  __fl.witness('optimistic', {{ text: text }});
  fetch('/s/' + __fl.scope + '/form/save', {{ method: 'POST', headers: {{ 'content-type': 'application/json' }}, body: JSON.stringify({{ text: text, key: save.dataset.key }}) }})
    .then(function (r) {{ if (!r.ok) {{ setTimeout(function () {{ li.remove(); statusLine.textContent = ''; __fl.witness('rolled_back', {{ status: r.status }}); }}, {rollback_ms}); }} }});
}}, true);
"#
    ));
}

/// Every click on save draws a new idempotency key.
pub(super) fn fresh_key_per_click(x: &mut Extras) {
    x.script.push_str(
        r#"document.addEventListener('click', function (e) {
  if (!(e.target.closest && e.target.closest('#save'))) return;
  var before = save.dataset.key;
  save.dataset.key = newKey();
  __fl.witness('fresh_key', { before: before, after: save.dataset.key });
}, true);
"#,
    );
}
