//! Trusted input on a trial page: mouse, wheel and keyboard events dispatched over CDP.

use super::page::TrialPage;
use anyhow::{bail, Result};
use chromiumoxide::cdp::browser_protocol::input::{
    DispatchKeyEventParams, DispatchKeyEventType, DispatchMouseEventParams, DispatchMouseEventType,
    InsertTextParams, MouseButton,
};
use faultline_tasks::Point;

impl TrialPage {
    pub(super) async fn mouse(
        &self,
        kind: DispatchMouseEventType,
        p: Point,
        button: Option<(MouseButton, i64)>,
    ) -> Result<()> {
        let mut params = DispatchMouseEventParams::new(kind, p.x, p.y);
        if let Some((button, count)) = button {
            params.buttons = Some(match button {
                MouseButton::Right => 2,
                _ => 1,
            });
            params.button = Some(button);
            params.click_count = Some(count);
        }
        self.cdp("dispatching a mouse event", params).await?;
        Ok(())
    }

    /// A trusted left click at a viewport point.
    pub async fn click(&self, p: Point) -> Result<()> {
        self.click_with(p, MouseButton::Left, 1).await
    }

    /// A trusted double click at a viewport point: two presses and releases, the second
    /// with click count 2 (what a browser sees from a real double click).
    pub async fn double_click(&self, p: Point) -> Result<()> {
        self.click_with(p, MouseButton::Left, 2).await
    }

    /// A trusted right click at a viewport point.
    pub async fn right_click(&self, p: Point) -> Result<()> {
        self.click_with(p, MouseButton::Right, 1).await
    }

    /// Moves to `p`, then presses and releases `button` `count` times with rising click
    /// counts.
    async fn click_with(&self, p: Point, button: MouseButton, count: i64) -> Result<()> {
        self.mouse(DispatchMouseEventType::MouseMoved, p, None)
            .await?;
        for n in 1..=count {
            self.mouse(
                DispatchMouseEventType::MousePressed,
                p,
                Some((button.clone(), n)),
            )
            .await?;
            self.mouse(
                DispatchMouseEventType::MouseReleased,
                p,
                Some((button.clone(), n)),
            )
            .await?;
        }
        Ok(())
    }

    /// Moves the mouse to a viewport point.
    pub async fn hover(&self, p: Point) -> Result<()> {
        self.mouse(DispatchMouseEventType::MouseMoved, p, None)
            .await
    }

    /// Inserts text into the focused element, as an IME commit would.
    pub async fn insert_text(&self, text: &str) -> Result<()> {
        self.cdp("inserting text", InsertTextParams::new(text))
            .await?;
        Ok(())
    }

    /// Presses and releases a key, optionally holding modifiers: `Enter`, `Tab`, `Escape`,
    /// `Backspace`, `Delete`, the arrows, `Home`, `End`, `PageUp`, `PageDown`, `Space`, or
    /// a single character, after any of `Control+`, `Alt+`, `Shift+`, `Meta+`
    /// (`Control+a`).
    pub async fn press(&self, key: &str) -> Result<()> {
        let KeyChord {
            modifiers,
            key,
            code,
            vk,
            text,
        } = key_chord(key)?;
        for kind in [DispatchKeyEventType::KeyDown, DispatchKeyEventType::KeyUp] {
            let mut p = DispatchKeyEventParams::new(kind.clone());
            p.key = Some(key.clone());
            p.code = Some(code.clone());
            p.windows_virtual_key_code = Some(vk);
            p.native_virtual_key_code = Some(vk);
            if modifiers != 0 {
                p.modifiers = Some(modifiers);
            }
            if kind == DispatchKeyEventType::KeyDown {
                p.text = text.clone();
            }
            self.cdp("dispatching a key", p).await?;
        }
        Ok(())
    }

    /// Scrolls with the mouse wheel at the centre of the viewport.
    pub async fn scroll(&self, dx: f64, dy: f64) -> Result<()> {
        let c = Point::new(
            f64::from(self.viewport.width) / 2.0,
            f64::from(self.viewport.height) / 2.0,
        );
        let mut p = DispatchMouseEventParams::new(DispatchMouseEventType::MouseWheel, c.x, c.y);
        p.delta_x = Some(dx);
        p.delta_y = Some(dy);
        self.cdp("scrolling", p).await?;
        Ok(())
    }

    /// Whether keyboard input would reach an editable element (an input, a textarea, a
    /// contenteditable), looking into same-origin frames.
    pub async fn has_editable_focus(&self) -> Result<bool> {
        const JS: &str = r#"(() => {
          let a = document.activeElement;
          while (a && a.tagName === 'IFRAME') { try { a = a.contentDocument.activeElement; } catch (e) { break; } }
          if (!a) return false;
          if (a.isContentEditable) return true;
          if (a.tagName === 'TEXTAREA') return !a.disabled && !a.readOnly;
          if (a.tagName !== 'INPUT') return false;
          const t = (a.type || 'text').toLowerCase();
          return !['button', 'submit', 'reset', 'checkbox', 'radio', 'file', 'image', 'range', 'color', 'hidden'].includes(t) && !a.disabled && !a.readOnly;
        })()"#;
        Ok(self.eval(JS).await? == serde_json::Value::Bool(true))
    }
}

/// A key event's fields: what [`TrialPage::press`] sends.
#[derive(Debug, PartialEq)]
struct KeyChord {
    /// CDP's modifier bit field: Alt 1, Control 2, Meta 4, Shift 8.
    modifiers: i64,
    key: String,
    code: String,
    vk: i64,
    /// The text the key inserts (none while Control, Alt or Meta is held).
    text: Option<String>,
}

/// The key names [`TrialPage::press`] supports, for its error message.
const SUPPORTED_KEYS: &str = "Enter, Tab, Escape, Backspace, Delete, ArrowDown, ArrowUp, ArrowLeft, ArrowRight, Home, End, PageUp, PageDown, Space or one character, optionally after Control+, Alt+, Shift+ or Meta+";

fn key_chord(chord: &str) -> Result<KeyChord> {
    // `Control++` presses `+`: the last `+` is the key when the chord ends in two.
    let (mods, name) = match chord.strip_suffix("++") {
        Some(head) => (head, "+"),
        None => match chord.rsplit_once('+') {
            Some((head, tail)) if !tail.is_empty() => (head, tail),
            _ => ("", chord),
        },
    };
    let mut modifiers = 0;
    for m in mods.split('+').filter(|m| !m.is_empty()) {
        modifiers |= match m {
            "Alt" => 1,
            "Control" => 2,
            "Meta" => 4,
            "Shift" => 8,
            other => {
                bail!("unsupported modifier `{other}` in `{chord}` (supported: {SUPPORTED_KEYS})")
            }
        };
    }
    let named = |code: &str, vk: i64, text: Option<&str>| {
        (
            code.to_string(),
            code.to_string(),
            vk,
            text.map(str::to_string),
        )
    };
    let (key, code, vk, text) = match name {
        "Enter" => named("Enter", 13, Some("\r")),
        "Tab" => named("Tab", 9, None),
        "Escape" => named("Escape", 27, None),
        "Backspace" => named("Backspace", 8, None),
        "Delete" => named("Delete", 46, None),
        "ArrowDown" => named("ArrowDown", 40, None),
        "ArrowUp" => named("ArrowUp", 38, None),
        "ArrowLeft" => named("ArrowLeft", 37, None),
        "ArrowRight" => named("ArrowRight", 39, None),
        "Home" => named("Home", 36, None),
        "End" => named("End", 35, None),
        "PageUp" => named("PageUp", 33, None),
        "PageDown" => named("PageDown", 34, None),
        "Space" | " " => (
            " ".to_string(),
            "Space".to_string(),
            32,
            Some(" ".to_string()),
        ),
        one if one.chars().count() == 1 => {
            let c = one.chars().next().expect("one character");
            let (code, vk) = if c.is_ascii_alphabetic() {
                (
                    format!("Key{}", c.to_ascii_uppercase()),
                    i64::from(c.to_ascii_uppercase() as u8),
                )
            } else if c.is_ascii_digit() {
                (format!("Digit{c}"), i64::from(c as u8))
            } else {
                (String::new(), 0)
            };
            (one.to_string(), code, vk, Some(one.to_string()))
        }
        other => bail!("unsupported key `{other}` (supported: {SUPPORTED_KEYS})"),
    };
    // Holding Control, Alt or Meta makes a key a command, not text.
    let text = if modifiers & (1 | 2 | 4) != 0 {
        None
    } else {
        text
    };
    Ok(KeyChord {
        modifiers,
        key,
        code,
        vk,
        text,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_chords() {
        let enter = key_chord("Enter").unwrap();
        assert_eq!(
            (
                enter.modifiers,
                enter.key.as_str(),
                enter.vk,
                enter.text.as_deref()
            ),
            (0, "Enter", 13, Some("\r"))
        );
        let space = key_chord("Space").unwrap();
        assert_eq!((space.key.as_str(), space.code.as_str()), (" ", "Space"));
        let select_all = key_chord("Control+a").unwrap();
        assert_eq!(
            (
                select_all.modifiers,
                select_all.code.as_str(),
                select_all.vk,
                select_all.text
            ),
            (2, "KeyA", 65, None)
        );
        let shift_tab = key_chord("Shift+Tab").unwrap();
        assert_eq!((shift_tab.modifiers, shift_tab.code.as_str()), (8, "Tab"));
        assert_eq!(key_chord("Control++").unwrap().key, "+");
        assert_eq!(key_chord("+").unwrap().key, "+");
        assert!(key_chord("Hyper+a").is_err());
        assert!(key_chord("F13").is_err());
    }
}
