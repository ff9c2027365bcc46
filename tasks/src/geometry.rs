//! Sizes, points and rectangles in CSS pixels.

use serde::{Deserialize, Serialize};
use std::fmt;

/// The viewport every page is laid out for.
pub const VIEWPORT: Size = Size::new(1200, 800);
/// The screenshot size a model sees (a 3/4 downscale of the viewport).
pub const IMAGE: Size = Size::new(900, 600);
/// The widest or tallest screenshot a decision may say its model was sent, in pixels:
/// twice an 8K screen's width. A larger size is a typo or garbage, and would scale the
/// reply's points out of all proportion.
pub const MAX_IMAGE_SIDE: u32 = 16_384;

/// A width and height in pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Size {
    /// Width, in pixels.
    pub width: u32,
    /// Height, in pixels.
    pub height: u32,
}

impl Size {
    /// A `width` by `height` size.
    pub const fn new(width: u32, height: u32) -> Self {
        Size { width, height }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}x{}", self.width, self.height)
    }
}

/// A point; image points are integers in practice, viewport points may be fractional.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Point {
    /// Horizontal coordinate, in pixels from the left edge.
    pub x: f64,
    /// Vertical coordinate, in pixels from the top edge.
    pub y: f64,
}

impl Point {
    /// The point (`x`, `y`).
    pub const fn new(x: f64, y: f64) -> Self {
        Point { x, y }
    }

    /// Maps a point from a `from`-sized image onto a `to`-sized surface.
    pub fn scale(self, from: Size, to: Size) -> Point {
        Point {
            x: self.x * f64::from(to.width) / f64::from(from.width),
            y: self.y * f64::from(to.height) / f64::from(from.height),
        }
    }
}

impl fmt::Display for Point {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", fmt_num(self.x), fmt_num(self.y))
    }
}

fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// An axis-aligned rectangle.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rect {
    /// Left edge, in pixels.
    pub x: f64,
    /// Top edge, in pixels.
    pub y: f64,
    /// Width, in pixels.
    pub width: f64,
    /// Height, in pixels.
    pub height: f64,
}

impl Rect {
    /// The rectangle with top-left corner (`x`, `y`) and the given size.
    pub const fn new(x: f64, y: f64, width: f64, height: f64) -> Self {
        Rect {
            x,
            y,
            width,
            height,
        }
    }

    /// The rectangle's centre point.
    pub fn center(&self) -> Point {
        Point::new(self.x + self.width / 2.0, self.y + self.height / 2.0)
    }

    /// Half-open containment, matching how browsers hit-test box edges.
    pub fn contains(&self, p: Point) -> bool {
        p.x >= self.x && p.x < self.x + self.width && p.y >= self.y && p.y < self.y + self.height
    }

    /// True when `p` is inside the rectangle shrunk by `margin` on every side.
    pub fn contains_with_margin(&self, p: Point, margin: f64) -> bool {
        p.x >= self.x + margin
            && p.x < self.x + self.width - margin
            && p.y >= self.y + margin
            && p.y < self.y + self.height - margin
    }

    /// True when `p` is at least `margin` away from the rectangle.
    pub fn clear_of(&self, p: Point, margin: f64) -> bool {
        p.x < self.x - margin
            || p.x >= self.x + self.width + margin
            || p.y < self.y - margin
            || p.y >= self.y + self.height + margin
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_maps_image_to_viewport() {
        let p = Point::new(450.0, 300.0).scale(Size::new(900, 600), Size::new(1200, 800));
        assert_eq!(p, Point::new(600.0, 400.0));
    }

    #[test]
    fn rect_edges_are_half_open() {
        let r = Rect::new(10.0, 10.0, 10.0, 10.0);
        assert!(r.contains(Point::new(10.0, 10.0)));
        assert!(!r.contains(Point::new(20.0, 15.0)));
        assert!(r.clear_of(Point::new(25.0, 15.0), 4.0));
        assert!(!r.clear_of(Point::new(22.0, 15.0), 4.0));
    }
}
