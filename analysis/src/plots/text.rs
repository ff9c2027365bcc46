//! Text measurement and PNG text rasterisation with the embedded DejaVu Sans.
//!
//! plotters 0.3.7 draws `ab_glyph` text without each glyph's left side bearing (its
//! `style/font/ab_glyph.rs` places a glyph's bitmap at the pen position instead of at
//! `pen + px_bounds.min.x`), so narrow glyphs drift left into their neighbours: "cl" reads
//! "d". [`FontFix`] wraps a plotters backend: on the bitmap backend it rasterises text
//! itself (sub-pixel glyph positions, kerning, bearings, anchors and the four right-angle
//! rotations), and on both backends it measures text the same way, so that the SVG and the
//! PNG get the same layout (the same label areas and the same shortened labels).
//!
//! Metrics follow plotters' SVG backend: a text style of size `s` is written as
//! `font-size = s / 1.24`, so the em here is `s / 1.24` pixels too, and the vertical anchors
//! match the SVG's `dy` (top: the baseline 0.76 em below the anchor; centre: 0.5 ex below
//! it; bottom: 0.5 ex above it).

use std::sync::OnceLock;

use ab_glyph::{point, Font, FontRef, PxScale, ScaleFont};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind,
    FontTransform,
};

use super::FONT_BYTES;

/// The parsed embedded font, or `None` if it does not parse.
pub(crate) fn font() -> Option<&'static FontRef<'static>> {
    static FONT: OnceLock<Option<FontRef<'static>>> = OnceLock::new();
    FONT.get_or_init(|| FontRef::try_from_slice(FONT_BYTES).ok())
        .as_ref()
}

#[derive(Debug)]
struct FontUnavailable;

impl std::fmt::Display for FontUnavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the embedded DejaVu Sans font does not parse")
    }
}

impl std::error::Error for FontUnavailable {}

/// The em size in pixels for a plotters text size.
fn em(size: f64) -> f32 {
    (size / 1.24) as f32
}

fn scale(font: &FontRef<'static>, em: f32) -> PxScale {
    let units = font.units_per_em().unwrap_or(2048.0);
    PxScale::from(em * font.height_unscaled() / units)
}

/// The x-height as a fraction of the em.
fn x_height(font: &FontRef<'static>) -> f32 {
    let units = font.units_per_em().unwrap_or(2048.0);
    font.outline(font.glyph_id('x'))
        .map(|o| (o.bounds.max.y - o.bounds.min.y).abs() / units)
        .filter(|h| *h > 0.2 && *h < 0.9)
        .unwrap_or(0.55)
}

/// The glyphs of `text` laid out on a baseline at y = 0 from x = 0, and the advance width.
fn layout(font: &FontRef<'static>, text: &str, size: f64) -> (Vec<ab_glyph::Glyph>, f32) {
    let scale = scale(font, em(size));
    let scaled = font.as_scaled(scale);
    let mut caret = 0.0f32;
    let mut previous = None;
    let mut glyphs = Vec::with_capacity(text.len());
    for c in text.chars() {
        let id = font.glyph_id(c);
        if let Some(p) = previous {
            caret += scaled.kern(p, id);
        }
        glyphs.push(id.with_scale_and_position(scale, point(caret, 0.0)));
        caret += scaled.h_advance(id);
        previous = Some(id);
    }
    (glyphs, caret)
}

/// The advance width of `text` in pixels at plotters text size `size`.
pub(crate) fn measure(text: &str, size: f64) -> f32 {
    match font() {
        Some(font) => layout(font, text, size).1,
        None => 0.0,
    }
}

/// Calls `put(x, y, coverage)` for each pixel of `text`'s glyphs, with the anchor at (0, 0)
/// and the transform applied.
fn raster(
    font: &FontRef<'static>,
    text: &str,
    size: f64,
    (h_pos, v_pos): (HPos, VPos),
    transform: FontTransform,
    mut put: impl FnMut(i32, i32, f32),
) {
    let em = em(size);
    let (glyphs, width) = layout(font, text, size);
    let dx = match h_pos {
        HPos::Left => 0.0,
        HPos::Center => -width / 2.0,
        HPos::Right => -width,
    };
    let ex = x_height(font) * em;
    let baseline = match v_pos {
        VPos::Top => 0.76 * em,
        VPos::Center => 0.5 * ex,
        VPos::Bottom => -0.5 * ex,
    };
    for mut glyph in glyphs {
        glyph.position = point(glyph.position.x + dx, baseline);
        if let Some(outlined) = font.outline_glyph(glyph) {
            let bounds = outlined.px_bounds();
            let (x0, y0) = (bounds.min.x as i32, bounds.min.y as i32);
            outlined.draw(|x, y, coverage| {
                let (lx, ly) = (x0 + x as i32, y0 + y as i32);
                let (tx, ty) = match transform {
                    FontTransform::None => (lx, ly),
                    FontTransform::Rotate90 => (-ly, lx),
                    FontTransform::Rotate180 => (-lx, -ly),
                    FontTransform::Rotate270 => (ly, -lx),
                };
                put(tx, ty, coverage);
            });
        }
    }
}

/// A plotters backend with this module's text measurement and, if `raster_text`, its text
/// rasterisation; everything else goes straight to `inner`.
pub(crate) struct FontFix<B> {
    pub(crate) inner: B,
    pub(crate) raster_text: bool,
}

impl<B: DrawingBackend> DrawingBackend for FontFix<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }

    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.present()
    }

    fn draw_pixel(
        &mut self,
        point: BackendCoord,
        color: BackendColor,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_pixel(point, color)
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_line(from, to, style)
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        upper_left: BackendCoord,
        bottom_right: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_rect(upper_left, bottom_right, style, fill)
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_path(path, style)
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        center: BackendCoord,
        radius: u32,
        style: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.draw_circle(center, radius, style, fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.fill_polygon(vert, style)
    }

    fn draw_text<TStyle: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &TStyle,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        if !self.raster_text {
            return self.inner.draw_text(text, style, pos);
        }
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let font = font().ok_or_else(|| DrawingErrorKind::FontError(Box::new(FontUnavailable)))?;
        let (w, h) = self.get_size();
        let anchor = style.anchor();
        let mut pixels = Vec::new();
        raster(
            font,
            text,
            style.size(),
            (anchor.h_pos, anchor.v_pos),
            style.transform(),
            |x, y, coverage| pixels.push((pos.0 + x, pos.1 + y, coverage)),
        );
        for (x, y, coverage) in pixels {
            if coverage <= 0.0 || x < 0 || y < 0 || x >= w as i32 || y >= h as i32 {
                continue;
            }
            let alpha = color.alpha * f64::from(coverage.min(1.0));
            self.inner.draw_pixel(
                (x, y),
                BackendColor {
                    alpha,
                    rgb: color.rgb,
                },
            )?;
        }
        Ok(())
    }

    fn estimate_text_size<TStyle: BackendTextStyle>(
        &self,
        text: &str,
        style: &TStyle,
    ) -> Result<(u32, u32), DrawingErrorKind<Self::ErrorType>> {
        if font().is_none() {
            return Err(DrawingErrorKind::FontError(Box::new(FontUnavailable)));
        }
        Ok((
            measure(text, style.size()).ceil() as u32,
            em(style.size()).round() as u32,
        ))
    }

    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<Self::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ink pixels (coverage above one half) of `text` at plotters size `size`, anchored at
    /// its top-left.
    fn ink(text: &str, size: f64, transform: FontTransform) -> Vec<(i32, i32)> {
        let mut pixels = Vec::new();
        raster(
            font().unwrap(),
            text,
            size,
            (HPos::Left, VPos::Top),
            transform,
            |x, y, c| {
                if c > 0.5 {
                    pixels.push((x, y))
                }
            },
        );
        pixels
    }

    #[test]
    fn glyphs_keep_their_left_side_bearing() {
        // DejaVu Sans' "l" has a left side bearing of 193/2048 em: at a 100 px em its stem
        // starts about 9 px right of the pen (plotters' own ab_glyph text starts it at 0).
        let l = ink("l", 124.0, FontTransform::None);
        let min_x = l.iter().map(|p| p.0).min().unwrap();
        assert!(
            (7..=11).contains(&min_x),
            "the l's ink starts at x = {min_x}"
        );
        // In "cl" the l's stem keeps a clear gap from the c.
        let cl = ink("cl", 124.0, FontTransform::None);
        let advance_c = measure("c", 124.0);
        let l_start = cl
            .iter()
            .filter(|p| p.0 as f32 > advance_c - 2.0)
            .map(|p| p.0)
            .min()
            .unwrap();
        assert!(
            l_start as f32 >= advance_c + 7.0,
            "l starts at {l_start}, c advances {advance_c}"
        );
    }

    #[test]
    fn text_is_anchored_and_rotated_like_the_svg() {
        let plain = ink("Hx", 31.0, FontTransform::None);
        let (min_y, max_y) = (
            plain.iter().map(|p| p.1).min().unwrap(),
            plain.iter().map(|p| p.1).max().unwrap(),
        );
        // Top anchor: the baseline 0.76 em (= 19 px at a 25 px em) below the anchor, capitals
        // about 0.73 em tall.
        assert!((17..=20).contains(&max_y), "baseline row {max_y}");
        assert!((0..=3).contains(&min_y), "cap top row {min_y}");
        // Rotate270 maps (x, y) to (y, -x): the text runs upwards from the anchor.
        let rotated = ink("Hx", 31.0, FontTransform::Rotate270);
        let mut expected: Vec<(i32, i32)> = plain.iter().map(|&(x, y)| (y, -x)).collect();
        let mut rotated_sorted = rotated.clone();
        expected.sort();
        rotated_sorted.sort();
        assert_eq!(rotated_sorted, expected);
    }

    #[test]
    fn measure_grows_with_text_and_size() {
        assert_eq!(measure("", 14.0), 0.0);
        assert!(measure("ab", 14.0) > measure("a", 14.0));
        assert!((measure("abc", 28.0) - 2.0 * measure("abc", 14.0)).abs() < 0.01);
    }
}
