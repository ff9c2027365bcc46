//! The coordinate-space family: a harness that takes the model's point in one space and
//! dispatches it as if it were in another.
//!
//! Each [`Misread`] tells one story from the public trackers. The model looked at an
//! image and answered with a point in *that image's* space, in whole numbers, as models
//! do ([`Misread::model_point`]); the executor then converts it from the space it
//! *believes* the point is in ([`Misread::executed`]). An honest executor's viewport point
//! (the decision's point scaled to the viewport) is where the model meant to click, so
//! every conversion here is a pure function of that point, the viewport and the
//! parameters drawn from the trial seed, and can be checked by hand (the golden tests
//! below, rounding at the edges included).
//!
//! Whether the misread point still lands on the element the model meant is a fact of the
//! page, not of the arithmetic: the execute stage hit-tests both points and stores the
//! trial as not fired when they meet the same element.

use crate::catalogue::Fault;
use faultline_tasks::{Point, Size};
use rand::Rng;
use serde::{Deserialize, Serialize};

/// The long edge a model provider downscales a screenshot to (Anthropic's documented
/// limit for computer use images).
const PROVIDER_LONG_EDGE: u32 = 1568;
/// The pixel budget a model provider downscales a screenshot to, with the long edge.
const PROVIDER_PIXELS: f64 = 1_150_000.0;
/// The long edge a harness caps its own captures at before sending them.
const CAPTURE_CAP: u32 = 2048;

/// Window-chrome offsets (x, y) in CSS pixels: the example offset of the issue trackers
/// (a tool "correcting" 128, 81), a GNOME header bar (47 px) and a Windows frame with its
/// title bar (8, 31).
const CHROME_OFFSETS: [(u32, u32); 3] = [(128, 81), (0, 47), (8, 31)];

/// One way of reading the model's point in the wrong space.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "variant", rename_all = "snake_case")]
pub enum Misread {
    /// The harness captured `captured` (a device-pixel screenshot, possibly capped at
    /// 2048 px), the provider resized it to `seen` before the model saw it, and the
    /// executor scaled the model's point from `captured`, not from `seen`.
    ProviderDownscale {
        /// The screenshot the harness sent.
        captured: Size,
        /// The image the model actually saw.
        seen: Size,
        /// Whether the provider also applied its 1.15-megapixel budget.
        pixel_budget: bool,
    },
    /// The page runs at device scale factor `dsf`. With `device_as_css`, the screenshot
    /// is in device pixels and the executor sends its points as CSS pixels (lands `dsf`
    /// times too far); otherwise the screenshot is in CSS pixels and the executor divides
    /// by `dsf` as if it were in device pixels (lands at `1/dsf`).
    DeviceScale {
        /// The device scale factor (2 or 3).
        dsf: u32,
        /// Which way round the spaces are confused.
        device_as_css: bool,
    },
    /// The model saw a screenshot of the whole window, the page starting `(dx, dy)`
    /// below and right of its corner; the executor sends the window point as a viewport
    /// point (`inferred_scale: false`), or "corrects" it by the scale it infers from the
    /// window's size against the viewport's (`inferred_scale: true`).
    WindowOffset {
        /// Horizontal chrome, CSS pixels.
        dx: u32,
        /// Vertical chrome, CSS pixels.
        dy: u32,
        /// Whether the tool scales instead of subtracting the offset.
        inferred_scale: bool,
    },
    /// The reply's points are read in the other convention: a 0–1000 grid used as
    /// viewport pixels (`grid_as_pixels`), or screenshot pixels read as a 0–1000 grid.
    /// Which one follows from the decision's own space, never from the seed.
    NormalisedGrid {
        /// The reply is on a 0–1000 grid and the executor takes it as pixels.
        grid_as_pixels: bool,
    },
}

/// `size` scaled by `factor`, each side rounded to whole pixels (as image resizers do).
fn resized(size: Size, factor: f64) -> Size {
    Size::new(
        (f64::from(size.width) * factor).round() as u32,
        (f64::from(size.height) * factor).round() as u32,
    )
}

/// The factor a provider resizes `image` by: never up; down to the long edge, and with
/// `pixel_budget` also down to 1.15 megapixels.
fn provider_factor(image: Size, pixel_budget: bool) -> f64 {
    let long = f64::from(image.width.max(image.height));
    let mut factor = (f64::from(PROVIDER_LONG_EDGE) / long).min(1.0);
    if pixel_budget {
        let pixels = f64::from(image.width) * f64::from(image.height);
        factor = factor.min((PROVIDER_PIXELS / pixels).sqrt());
    }
    factor
}

/// A point rounded to whole pixels, the way a model writes it.
fn whole(p: Point) -> Point {
    Point::new(p.x.round(), p.y.round())
}

impl Misread {
    /// The faults of the family, each drawing its misread in [`Misread::draw`].
    pub const FAMILY: [Fault; 4] = [
        Fault::ProviderDownscale,
        Fault::DeviceScaleMismatch,
        Fault::WindowOffset,
        Fault::NormalisedGridMisread,
    ];

    /// The misread a coordinate-family fault draws for a trial, `None` for any other
    /// fault. `grid_reply` is whether the decision's points are on a 0–1000 grid.
    pub fn draw(
        fault: Fault,
        viewport: Size,
        grid_reply: bool,
        rng: &mut impl Rng,
    ) -> Option<Misread> {
        Some(match fault {
            Fault::ProviderDownscale => {
                // A device-pixel capture (DSF 2), sent whole or capped at 2048 px.
                let device = resized(viewport, 2.0);
                let long = device.width.max(device.height);
                let captured = match rng.random_bool(0.5) && long > CAPTURE_CAP {
                    true => resized(device, f64::from(CAPTURE_CAP) / f64::from(long)),
                    false => device,
                };
                let pixel_budget = rng.random_bool(0.5);
                let seen = resized(captured, provider_factor(captured, pixel_budget));
                Misread::ProviderDownscale {
                    captured,
                    seen,
                    pixel_budget,
                }
            }
            Fault::DeviceScaleMismatch => Misread::DeviceScale {
                dsf: rng.random_range(2..=3),
                device_as_css: rng.random_bool(0.5),
            },
            Fault::WindowOffset => {
                let (dx, dy) = CHROME_OFFSETS[rng.random_range(0..CHROME_OFFSETS.len())];
                Misread::WindowOffset {
                    dx,
                    dy,
                    inferred_scale: rng.random_bool(0.5),
                }
            }
            Fault::NormalisedGridMisread => Misread::NormalisedGrid {
                grid_as_pixels: grid_reply,
            },
            _ => return None,
        })
    }

    /// The point the model gives for the viewport point `intended`, in the space of the
    /// image it saw, in whole numbers. `reply` is the decision's own point and `space` the
    /// extent of its space (for the grid misread, which reads the reply's own numbers).
    pub fn model_point(&self, intended: Point, viewport: Size, reply: Point) -> Point {
        match *self {
            Misread::ProviderDownscale { seen, .. } => whole(intended.scale(viewport, seen)),
            Misread::DeviceScale {
                dsf,
                device_as_css: true,
            } => whole(Point::new(
                intended.x * f64::from(dsf),
                intended.y * f64::from(dsf),
            )),
            Misread::DeviceScale { .. } => whole(intended),
            Misread::WindowOffset { dx, dy, .. } => whole(Point::new(
                intended.x + f64::from(dx),
                intended.y + f64::from(dy),
            )),
            Misread::NormalisedGrid { .. } => reply,
        }
    }

    /// The viewport point the misreading executor dispatches for the model's point.
    pub fn executed(&self, model: Point, viewport: Size) -> Point {
        match *self {
            Misread::ProviderDownscale { captured, .. } => model.scale(captured, viewport),
            Misread::DeviceScale {
                device_as_css: true,
                ..
            } => model,
            Misread::DeviceScale { dsf, .. } => {
                Point::new(model.x / f64::from(dsf), model.y / f64::from(dsf))
            }
            Misread::WindowOffset {
                inferred_scale: false,
                ..
            } => model,
            Misread::WindowOffset { dx, dy, .. } => {
                let window = Size::new(viewport.width + dx, viewport.height + dy);
                model.scale(window, viewport)
            }
            Misread::NormalisedGrid {
                grid_as_pixels: true,
            } => model,
            Misread::NormalisedGrid { .. } => model.scale(Size::new(1000, 1000), viewport),
        }
    }

    /// The space the model saw, in words (the witness's `seen`).
    pub fn seen(&self) -> String {
        match *self {
            Misread::ProviderDownscale {
                captured,
                seen,
                pixel_budget,
            } => format!(
                "{}x{}, the provider's downscale ({}) of a {}x{} capture",
                seen.width,
                seen.height,
                match pixel_budget {
                    true => "1568 px long edge and 1.15 MP",
                    false => "1568 px long edge",
                },
                captured.width,
                captured.height
            ),
            Misread::DeviceScale {
                dsf,
                device_as_css: true,
            } => format!("device pixels at DSF {dsf}, dispatched as CSS pixels"),
            Misread::DeviceScale { dsf, .. } => {
                format!("CSS pixels, divided by DSF {dsf} as if device pixels")
            }
            Misread::WindowOffset {
                dx,
                dy,
                inferred_scale,
            } => format!(
                "the window, its page offset by ({dx}, {dy}), {}",
                match inferred_scale {
                    true => "scaled by the window's size against the viewport's",
                    false => "dispatched as viewport pixels",
                }
            ),
            Misread::NormalisedGrid {
                grid_as_pixels: true,
            } => "a 0-1000 grid, dispatched as viewport pixels".into(),
            Misread::NormalisedGrid { .. } => "screenshot pixels, read as a 0-1000 grid".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    const VP: Size = Size::new(1200, 800);

    fn run(m: Misread, intended: Point) -> Point {
        m.executed(m.model_point(intended, VP, intended), VP)
    }

    #[test]
    fn provider_rules_match_their_published_limits() {
        // 2048 long edge -> 1568: the "clicks land about 23 % short" of the trackers.
        let capped = Size::new(2048, 1365);
        assert_eq!(
            resized(capped, provider_factor(capped, false)),
            Size::new(1568, 1045)
        );
        // 1.15 MP: 2048x1365 is 2.80 MP; sqrt(1.15/2.80) = 0.6414, and 1365 * 0.6414 = 875.49.
        assert_eq!(
            resized(capped, provider_factor(capped, true)),
            Size::new(1314, 875)
        );
        // The whole 2x capture of a 1200x800 viewport.
        let device = Size::new(2400, 1600);
        assert_eq!(
            resized(device, provider_factor(device, false)),
            Size::new(1568, 1045)
        );
        assert_eq!(
            resized(device, provider_factor(device, true)),
            Size::new(1313, 876)
        );
        // Never up: an image already inside both limits is left alone.
        let small = Size::new(900, 600);
        assert_eq!(provider_factor(small, true), 1.0);
    }

    #[test]
    fn golden_provider_downscale_lands_short_by_seen_over_captured() {
        let m = Misread::ProviderDownscale {
            captured: Size::new(2048, 1365),
            seen: Size::new(1568, 1045),
            pixel_budget: false,
        };
        // The model writes (784, 523) in the 1568x1045 image; the executor scales it from
        // 2048x1365: 784 * 1200 / 2048 = 459.375, 523 * 800 / 1365 = 306.52...
        let model = m.model_point(Point::new(600.0, 400.0), VP, Point::new(0.0, 0.0));
        assert_eq!(model, Point::new(784.0, 523.0));
        let got = m.executed(model, VP);
        assert_eq!(got.x, 459.375);
        assert!((got.y - 306.520).abs() < 1e-3, "{got}");
        // 23.4 % short of the intended point, as reported.
        assert!((1.0 - got.x / 600.0 - 0.234).abs() < 1e-3);
    }

    #[test]
    fn golden_device_scale_both_ways_for_dsf_2_and_3() {
        let p = Point::new(100.4, 50.6);
        for dsf in [2, 3] {
            let out = run(
                Misread::DeviceScale {
                    dsf,
                    device_as_css: true,
                },
                p,
            );
            // Device pixels are whole: round(100.4 * dsf), round(50.6 * dsf).
            let want = Point::new((100.4 * dsf as f64).round(), (50.6 * dsf as f64).round());
            assert_eq!(out, want);
            let back = run(
                Misread::DeviceScale {
                    dsf,
                    device_as_css: false,
                },
                p,
            );
            assert_eq!(back, Point::new(100.0 / dsf as f64, 51.0 / dsf as f64));
        }
    }

    #[test]
    fn golden_window_offset_added_and_inferred() {
        let p = Point::new(600.0, 400.0);
        let added = Misread::WindowOffset {
            dx: 128,
            dy: 81,
            inferred_scale: false,
        };
        assert_eq!(run(added, p), Point::new(728.0, 481.0));
        let inferred = Misread::WindowOffset {
            dx: 128,
            dy: 81,
            inferred_scale: true,
        };
        // (728 * 1200 / 1328, 481 * 800 / 881)
        let got = run(inferred, p);
        assert!(
            (got.x - 657.831).abs() < 1e-3 && (got.y - 436.776).abs() < 1e-3,
            "{got}"
        );
        // At the origin the inferred scale is harmless; the offset alone is not.
        let origin = Point::new(0.0, 0.0);
        assert_eq!(run(added, origin), Point::new(128.0, 81.0));
        let o = run(inferred, origin);
        assert!(
            (o.x - 115.663).abs() < 1e-3 && (o.y - 73.5528).abs() < 1e-3,
            "{o}"
        );
    }

    #[test]
    fn golden_normalised_grid_both_ways() {
        // A grid reply (500, 500) is the viewport's centre; as pixels it is (500, 500).
        let grid = Misread::NormalisedGrid {
            grid_as_pixels: true,
        };
        let reply = Point::new(500.0, 500.0);
        let model = grid.model_point(Point::new(600.0, 400.0), VP, reply);
        assert_eq!(grid.executed(model, VP), Point::new(500.0, 500.0));
        // A 900x600 screenshot's (450, 300) read as 0-1000: (540, 240).
        let pixels = Misread::NormalisedGrid {
            grid_as_pixels: false,
        };
        let reply = Point::new(450.0, 300.0);
        let model = pixels.model_point(Point::new(600.0, 400.0), VP, reply);
        assert_eq!(pixels.executed(model, VP), Point::new(540.0, 240.0));
    }

    #[test]
    fn every_family_fault_draws_a_misread_and_no_other_fault_does() {
        for f in Fault::ALL {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
            let m = Misread::draw(*f, VP, false, &mut rng);
            assert_eq!(m.is_some(), Misread::FAMILY.contains(f), "{f}");
        }
    }

    #[test]
    fn each_variant_is_drawn_for_some_seed() {
        let mut seen = std::collections::BTreeSet::new();
        for seed in 0..200 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            for f in [
                Fault::ProviderDownscale,
                Fault::DeviceScaleMismatch,
                Fault::WindowOffset,
            ] {
                seen.insert(format!(
                    "{:?}",
                    Misread::draw(f, VP, false, &mut rng).unwrap()
                ));
            }
        }
        // 2 captures x 2 rules, 2 factors x 2 directions, 3 offsets x 2 corrections.
        assert_eq!(seen.len(), 4 + 4 + 6, "{seen:#?}");
    }
}
