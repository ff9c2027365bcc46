//! Where a click was meant to land and where it landed, over the page's screenshot.
//!
//! The screenshot is the background, at its own size (the plot is exactly as large as the
//! screenshot, so its pixel coordinates are the page's). The intended point is a green ring
//! with a crosshair and a solid centre dot, the clicked point the same in red, joined by a
//! dark line; each is labelled with its coordinates, "intended (600, 400)" above it and
//! "clicked (450, 300)" below it (flipped, and shifted sideways, to stay inside the
//! picture). A legend box in a corner that covers neither point holds the title, the two
//! markers' meanings and the miss distance in pixels.
//!
//! Coordinates print as integers when they are whole and with one decimal otherwise.
//!
//! How the screenshot gets into each file:
//! * PNG: the decoded pixels (alpha composited over white) are blitted into plotters' bitmap
//!   backend, and the marks are drawn over them.
//! * SVG: the original PNG bytes are embedded, unchanged, as the document's first element,
//!   `<image x="0" y="0" width=W height=H href="data:image/png;base64,…"/>`, and the marks
//!   are plotters' ordinary SVG elements after it. (plotters-svg 0.3.7's own `blit_bitmap`
//!   is compiled only with its `image`/`bitmap_encoder` feature, which this workspace does
//!   not enable — without it plotters falls back to one `<rect>` per pixel — and even with
//!   it, it writes a `data:png` URI that is not a valid image MIME type; so the module embeds
//!   the image itself.)

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};
use plotters::style::RGBColor;

use super::{
    fit_text, render, text_style, text_width, Background, DrawResult, Drawing, PlotError, PlotFiles,
};

/// A point in the screenshot's pixel coordinates (x to the right, y down, origin at the
/// top-left corner).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PixelPoint {
    /// Pixels from the left edge.
    pub x: f64,
    /// Pixels from the top edge.
    pub y: f64,
}

impl PixelPoint {
    /// Convenience constructor.
    pub fn new(x: f64, y: f64) -> Self {
        PixelPoint { x, y }
    }

    fn px(self) -> (i32, i32) {
        (self.x.round() as i32, self.y.round() as i32)
    }
}

/// The intended point's colour (green).
pub(crate) const INTENDED: RGBColor = RGBColor(0x00, 0xa6, 0x3c);
/// The clicked point's colour (red).
pub(crate) const CLICKED: RGBColor = RGBColor(0xdc, 0x14, 0x14);

/// Draws `intended` and `clicked` over the screenshot `screenshot_png` (the PNG file's
/// bytes) to `<stem>.svg` and `<stem>.png`, both the screenshot's size. `title` goes in the
/// legend box (empty: no title line).
///
/// Errors: [`PlotError::Screenshot`] if the bytes are not a decodable PNG;
/// [`PlotError::Input`] if it is empty (0 pixels wide or high) or a coordinate is not
/// finite. Points outside the screenshot are allowed (their marks are cut off at the edge;
/// their labels stay inside).
pub fn click_overlay(
    screenshot_png: &[u8],
    intended: PixelPoint,
    clicked: PixelPoint,
    title: &str,
    stem: impl AsRef<Path>,
) -> Result<PlotFiles, PlotError> {
    let model = OverlayModel::new(screenshot_png, intended, clicked, title)?;
    render(stem.as_ref(), &model)
}

pub(crate) struct OverlayModel<'a> {
    png: &'a [u8],
    rgb: Vec<u8>,
    size: (u32, u32),
    intended: PixelPoint,
    clicked: PixelPoint,
    title: String,
}

/// `v` as an integer if whole, else with one decimal.
fn coord(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r.fract() == 0.0 {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// The label printed beside a point, e.g. `intended (600, 400)`.
pub(crate) fn point_label(name: &str, p: PixelPoint) -> String {
    format!("{name} ({}, {})", coord(p.x), coord(p.y))
}

/// An annulus around `c` as one polygon: the outer circle one way, the inner the other
/// (a hole under both the even-odd and the non-zero fill rule).
fn annulus(c: (i32, i32), inner: f64, outer: f64) -> Vec<(i32, i32)> {
    const STEPS: usize = 64;
    let at = |r: f64, i: usize| {
        let a = i as f64 * std::f64::consts::TAU / STEPS as f64;
        (
            c.0 + (r * a.cos()).round() as i32,
            c.1 + (r * a.sin()).round() as i32,
        )
    };
    let mut points: Vec<(i32, i32)> = (0..=STEPS).map(|i| at(outer, i)).collect();
    points.extend((0..=STEPS).rev().map(|i| at(inner, i)));
    points
}

/// The start of a span of `len` placed at `pos`, moved to lie within `0..total` if it can.
fn keep_inside(pos: i32, len: i32, total: i32) -> i32 {
    pos.min(total - len).max(0)
}

impl<'a> OverlayModel<'a> {
    pub(crate) fn new(
        png: &'a [u8],
        intended: PixelPoint,
        clicked: PixelPoint,
        title: &str,
    ) -> Result<Self, PlotError> {
        for (name, p) in [("intended", intended), ("clicked", clicked)] {
            if !p.x.is_finite() || !p.y.is_finite() {
                return Err(PlotError::Input(format!(
                    "the {name} point ({}, {}) is not finite",
                    p.x, p.y
                )));
            }
        }
        let decoded = image::load_from_memory_with_format(png, image::ImageFormat::Png)
            .map_err(PlotError::Screenshot)?
            .into_rgba8();
        let size = decoded.dimensions();
        if size.0 == 0 || size.1 == 0 {
            return Err(PlotError::Input(format!(
                "the screenshot is {}x{} pixels",
                size.0, size.1
            )));
        }
        // Composite over white, so that transparent pixels look as a browser shows them.
        let mut rgb = Vec::with_capacity(size.0 as usize * size.1 as usize * 3);
        for p in decoded.pixels() {
            let a = p[3] as u32;
            for c in &p.0[..3] {
                rgb.push(((*c as u32 * a + 255 * (255 - a) + 127) / 255) as u8);
            }
        }
        Ok(OverlayModel {
            png,
            rgb,
            size,
            intended,
            clicked,
            title: title.to_string(),
        })
    }

    fn draw_marker<DB: DrawingBackend>(
        root: &DrawingArea<DB, Shift>,
        p: PixelPoint,
        colour: RGBColor,
    ) -> DrawResult<DB> {
        let (x, y) = p.px();
        // The ring as a filled annulus (plotters' bitmap backend draws thick circle outlines
        // with gaps), over a wider white one for contrast.
        root.draw(&Polygon::new(
            annulus((x, y), 9.0, 16.0),
            WHITE.mix(0.9).filled(),
        ))?;
        root.draw(&Polygon::new(annulus((x, y), 10.5, 14.5), colour.filled()))?;
        let arm = colour.stroke_width(2);
        for (from, to) in [
            ((x - 24, y), (x - 7, y)),
            ((x + 7, y), (x + 24, y)),
            ((x, y - 24), (x, y - 7)),
            ((x, y + 7), (x, y + 24)),
        ] {
            root.draw(&PathElement::new(vec![from, to], arm))?;
        }
        root.draw(&Circle::new((x, y), 4, colour.filled()))
    }

    /// The label box for a point: above it (`above`) or below, on the other side if the
    /// preferred one leaves the picture or covers `other` (the other point), and shifted
    /// sideways to stay inside.
    fn draw_label<DB: DrawingBackend>(
        &self,
        root: &DrawingArea<DB, Shift>,
        text: &str,
        (p, other): (PixelPoint, PixelPoint),
        colour: RGBColor,
        above: bool,
    ) -> DrawResult<DB> {
        let (w, h) = (self.size.0 as i32, self.size.1 as i32);
        let style = text_style(15.0, BLACK, HPos::Left, VPos::Center);
        let box_w = text_width(text, &style) as i32 + 12;
        let box_h = 24;
        let (x, y) = p.px();
        let left = keep_inside(x - box_w / 2, box_w, w);
        let (above_top, below_top) = (y - 30 - box_h, y + 30);
        let candidates = if above {
            [above_top, below_top]
        } else {
            [below_top, above_top]
        };
        let inside = |top: i32| top >= 0 && top + box_h <= h;
        let (ox, oy) = other.px();
        let uncovered = |top: i32| {
            ox < left - 14 || ox > left + box_w + 14 || oy < top - 14 || oy > top + box_h + 14
        };
        let top = candidates
            .iter()
            .copied()
            .find(|&t| inside(t) && uncovered(t))
            .or_else(|| candidates.iter().copied().find(|&t| inside(t)))
            .unwrap_or(candidates[0]);
        let top = keep_inside(top, box_h, h);
        root.draw(&Rectangle::new(
            [(left, top), (left + box_w, top + box_h)],
            WHITE.mix(0.85).filled(),
        ))?;
        root.draw(&Rectangle::new(
            [(left, top), (left + box_w, top + box_h)],
            colour.stroke_width(2),
        ))?;
        root.draw_text(text, &style, (left + 6, top + box_h / 2))
    }

    fn draw_legend<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        let (w, h) = (self.size.0 as i32, self.size.1 as i32);
        let title_style = text_style(17.0, BLACK, HPos::Left, VPos::Center);
        let entry_style = text_style(14.0, BLACK, HPos::Left, VPos::Center);
        let miss = (self.clicked.x - self.intended.x).hypot(self.clicked.y - self.intended.y);
        let entries = [
            (Some(INTENDED), "intended point".to_string()),
            (Some(CLICKED), "clicked point".to_string()),
            (None, format!("miss: {} px", coord(miss))),
        ];
        let title = fit_text(&self.title, &title_style, (w - 40).max(0) as u32);
        let mut box_w = entries
            .iter()
            .map(|(_, t)| text_width(t, &entry_style) as i32 + 40)
            .max()
            .unwrap_or(0);
        if !title.is_empty() {
            box_w = box_w.max(text_width(&title, &title_style) as i32 + 20);
        }
        let title_h = if title.is_empty() { 0 } else { 26 };
        let box_h = 10 + title_h + 22 * entries.len() as i32;

        // The first corner whose box keeps clear of both points.
        let corners = [
            (8, 8),
            (w - box_w - 8, 8),
            (8, h - box_h - 8),
            (w - box_w - 8, h - box_h - 8),
        ];
        let clear = |(l, t): (i32, i32)| {
            [self.intended.px(), self.clicked.px()]
                .iter()
                .all(|&(x, y)| x < l - 30 || x > l + box_w + 30 || y < t - 30 || y > t + box_h + 30)
        };
        let (left, top) = corners
            .iter()
            .copied()
            .find(|&c| clear(c))
            .unwrap_or(corners[0]);
        let (left, top) = (keep_inside(left, box_w, w), keep_inside(top, box_h, h));

        root.draw(&Rectangle::new(
            [(left, top), (left + box_w, top + box_h)],
            WHITE.mix(0.88).filled(),
        ))?;
        root.draw(&Rectangle::new(
            [(left, top), (left + box_w, top + box_h)],
            RGBColor(0x44, 0x44, 0x44).stroke_width(1),
        ))?;
        let mut y = top + 5;
        if !title.is_empty() {
            root.draw_text(&title, &title_style, (left + 10, y + 13))?;
            y += title_h;
        }
        for (colour, text) in &entries {
            let cy = y + 11;
            if let Some(colour) = colour {
                root.draw(&Circle::new((left + 18, cy), 6, colour.stroke_width(2)))?;
                root.draw(&Circle::new((left + 18, cy), 2, colour.filled()))?;
            }
            root.draw_text(text, &entry_style, (left + 32, cy))?;
            y += 22;
        }
        Ok(())
    }
}

impl Drawing for OverlayModel<'_> {
    fn size(&self) -> (u32, u32) {
        self.size
    }

    fn background(&self) -> Background<'_> {
        Background::Screenshot {
            png: self.png,
            rgb: &self.rgb,
        }
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
        // The miss, from ring to ring.
        let (dx, dy) = (
            self.clicked.x - self.intended.x,
            self.clicked.y - self.intended.y,
        );
        let length = dx.hypot(dy);
        if length > 30.0 {
            let at = |t: f64| {
                (
                    (self.intended.x + dx * t).round() as i32,
                    (self.intended.y + dy * t).round() as i32,
                )
            };
            let gap = 15.0 / length;
            root.draw(&PathElement::new(
                vec![at(gap), at(1.0 - gap)],
                RGBColor(0x20, 0x20, 0x20).mix(0.75).stroke_width(2),
            ))?;
        }
        Self::draw_marker(root, self.intended, INTENDED)?;
        Self::draw_marker(root, self.clicked, CLICKED)?;
        let intended = point_label("intended", self.intended);
        let clicked = point_label("clicked", self.clicked);
        self.draw_label(
            root,
            &intended,
            (self.intended, self.clicked),
            INTENDED,
            true,
        )?;
        self.draw_label(
            root,
            &clicked,
            (self.clicked, self.intended),
            CLICKED,
            false,
        )?;
        self.draw_legend(root)
    }
}
