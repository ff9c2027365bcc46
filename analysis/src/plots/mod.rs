//! Plots for the report, in the spirit of criterion.rs: one file per plot.
//!
//! # Design
//!
//! * **One file per plot.** Each public plot function takes plain, documented input structs
//!   (defined here, with no dependency on the database or the statistics code), an output
//!   path *stem* such as `out/detection_heatmap`, and writes both `<stem>.svg` and
//!   `<stem>.png` (the extension is appended, never substituted, so a stem like `out/a.v2`
//!   gives `out/a.v2.svg`). Missing parent directories of the stem are created. Every plot
//!   returns [`PlotFiles`] (the two paths written) or a [`PlotError`] naming the path that
//!   failed.
//! * **One drawing, two backends.** A plot validates its input into a private model that
//!   implements the crate-private `Drawing` trait (a size, an optional background and a
//!   `draw` generic over the plotters backend). The crate-private `render` draws that same
//!   model once on plotters' SVG backend and once on its bitmap backend, and encodes the PNG
//!   with the `image` crate. Validation happens before anything is drawn, so an input error
//!   never leaves half-written files behind.
//! * **Fonts.** Nothing depends on system fonts: DejaVu Sans (`analysis/fonts/`, licence
//!   beside it) is compiled in and registered once (a `OnceLock`) with plotters' `ab_glyph`
//!   font table under the family name [`FONT_FAMILY`] (`"sans-serif"`), the only family any
//!   plot uses. plotters 0.3.7 rasterises `ab_glyph` text without the glyphs' left side
//!   bearings (so "cl" reads "d"), so both backends are wrapped (`text.rs`): on the bitmap
//!   backend text is rasterised from the embedded font with `ab_glyph` directly, and on both
//!   text is measured the same way, so the SVG and the PNG have the same layout. The SVG
//!   keeps text as `<text font-family="sans-serif">` elements (searchable and selectable;
//!   drawn by the viewer's own sans-serif font, at the same em size as the PNG).
//! * **Colour.** [`ColourScale`] holds the sequential scales used for rates (ColorBrewer
//!   "Blues" and "Reds", nine stops, linearly interpolated), and [`series_colour`] the
//!   colour-blind-safe Okabe–Ito palette used for categorical series.
//! * **Determinism.** Nothing reads the clock, the environment or a hash map's iteration
//!   order, and all input order is kept as given: the same input gives byte-identical SVG
//!   and PNG files (this is tested).
//! * **Empty input.** A plot with no rows does not fail: it draws its title and a centred
//!   "no data" message, at the plot's minimum size. Malformed input (a rate numerator above
//!   its denominator, an interval with `lower > upper`, a non-finite number, a duplicate or
//!   unknown cell, an undecodable screenshot) is a [`PlotError::Input`] /
//!   [`PlotError::Screenshot`] instead.
//!
//! # Plots
//!
//! | function | file | what |
//! | --- | --- | --- |
//! | [`heatmap`] | `heatmap.rs` | rows × columns of rates: fault, layer or task × policy |
//! | [`recovery_bars`] | `recovery_bars.rs` | grouped success-rate bars with intervals |
//! | [`forest`] | `forest.rs` | paired differences with intervals |
//! | [`click_overlay`] | `click_overlay.rs` | intended vs clicked point over a screenshot |
//!
//! The report's three heatmaps (detection by fault, detection by layer, false alarms by
//! task) are the one [`heatmap`]; they differ only in their rows and a [`RateSense`]
//! parameter (blue where a high rate is good, red where it is bad).

mod click_overlay;
mod forest;
mod heatmap;
mod recovery_bars;
#[cfg(test)]
mod tests;
mod text;

pub use click_overlay::{click_overlay, PixelPoint};
pub use forest::{forest, ForestRow};
pub use heatmap::{heatmap, HeatmapCell, RateSense};
pub use recovery_bars::{recovery_bars, BarPoint};

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontDesc, FontFamily, FontStyle, RGBColor};

/// The only font family the plots use; it is registered from the embedded DejaVu Sans.
pub const FONT_FAMILY: &str = "sans-serif";

/// DejaVu Sans, compiled in so that no plot depends on system fonts.
static FONT_BYTES: &[u8] = include_bytes!("../../fonts/DejaVuSans.ttf");

/// The files one plot wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlotFiles {
    /// `<stem>.svg`
    pub svg: PathBuf,
    /// `<stem>.png`
    pub png: PathBuf,
}

impl PlotFiles {
    /// The two paths for a stem: the extensions are appended, not substituted.
    pub fn from_stem(stem: &Path) -> Self {
        let with = |ext: &str| {
            let mut s: OsString = stem.as_os_str().to_owned();
            s.push(ext);
            PathBuf::from(s)
        };
        PlotFiles {
            svg: with(".svg"),
            png: with(".png"),
        }
    }
}

/// Why a plot could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PlotError {
    /// The input was malformed (nothing was written).
    #[error("invalid plot input: {0}")]
    Input(String),
    /// The screenshot given to the click overlay could not be decoded (nothing was written).
    #[error("cannot decode the screenshot PNG: {0}")]
    Screenshot(#[source] image::ImageError),
    /// The embedded font could not be registered with plotters.
    #[error("cannot register the embedded DejaVu Sans font with plotters")]
    Font,
    /// plotters failed while drawing the named output.
    #[error("drawing {path}: {message}", path = path.display())]
    Drawing {
        /// The file being drawn.
        path: PathBuf,
        /// plotters' error, as text (its error type is generic over the backend).
        message: String,
    },
    /// Encoding the PNG failed.
    #[error("encoding {path}: {source}", path = path.display())]
    Encode {
        /// The PNG being encoded.
        path: PathBuf,
        /// The encoder's error.
        #[source]
        source: image::ImageError,
    },
    /// Creating a directory or writing a file failed.
    #[error("writing {path}: {source}", path = path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The IO error.
        #[source]
        source: std::io::Error,
    },
}

/// Registers the embedded font with plotters, once per process.
pub(crate) fn ensure_font() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT_FAMILY, FontStyle::Normal, FONT_BYTES).is_ok()
    });
    if ok && text::font().is_some() {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}

/// A sequential colour scale for rates in `0..=1`: 0 is (near) white, 1 is dark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColourScale {
    /// ColorBrewer "Blues" (white → dark blue): used where a high rate is good.
    Blues,
    /// ColorBrewer "Reds" (white → dark red): used where a high rate is bad.
    Reds,
}

const BLUES: [(u8, u8, u8); 9] = [
    (0xf7, 0xfb, 0xff),
    (0xde, 0xeb, 0xf7),
    (0xc6, 0xdb, 0xef),
    (0x9e, 0xca, 0xe1),
    (0x6b, 0xae, 0xd6),
    (0x42, 0x92, 0xc6),
    (0x21, 0x71, 0xb5),
    (0x08, 0x51, 0x9c),
    (0x08, 0x30, 0x6b),
];

const REDS: [(u8, u8, u8); 9] = [
    (0xff, 0xf5, 0xf0),
    (0xfe, 0xe0, 0xd2),
    (0xfc, 0xbb, 0xa1),
    (0xfc, 0x92, 0x72),
    (0xfb, 0x6a, 0x4a),
    (0xef, 0x3b, 0x2c),
    (0xcb, 0x18, 0x1d),
    (0xa5, 0x0f, 0x15),
    (0x67, 0x00, 0x0d),
];

impl ColourScale {
    /// The colour for `t` (clamped to `0..=1`; NaN counts as 0), linearly interpolated
    /// between the scale's nine stops.
    pub fn colour(self, t: f64) -> RGBColor {
        let stops = match self {
            ColourScale::Blues => &BLUES,
            ColourScale::Reds => &REDS,
        };
        let t = if t.is_nan() { 0.0 } else { t.clamp(0.0, 1.0) };
        let x = t * (stops.len() - 1) as f64;
        let i = (x.floor() as usize).min(stops.len() - 2);
        let f = x - i as f64;
        let lerp = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * f).round() as u8;
        let (a, b) = (stops[i], stops[i + 1]);
        RGBColor(lerp(a.0, b.0), lerp(a.1, b.1), lerp(a.2, b.2))
    }
}

/// Black or white, whichever contrasts more with `background` (WCAG relative luminance).
pub fn text_colour_on(background: RGBColor) -> RGBColor {
    let lin = |c: u8| {
        let c = c as f64 / 255.0;
        if c <= 0.04045 {
            c / 12.92
        } else {
            ((c + 0.055) / 1.055).powf(2.4)
        }
    };
    let l = 0.2126 * lin(background.0) + 0.7152 * lin(background.1) + 0.0722 * lin(background.2);
    let against_black = (l + 0.05) / 0.05;
    let against_white = 1.05 / (l + 0.05);
    if against_white > against_black {
        WHITE
    } else {
        BLACK
    }
}

/// The `i`-th colour of the Okabe–Ito colour-blind-safe palette (black omitted, cycling).
pub fn series_colour(i: usize) -> RGBColor {
    const OKABE_ITO: [RGBColor; 7] = [
        RGBColor(0x00, 0x72, 0xb2), // blue
        RGBColor(0xe6, 0x9f, 0x00), // orange
        RGBColor(0x00, 0x9e, 0x73), // bluish green
        RGBColor(0xcc, 0x79, 0xa7), // reddish purple
        RGBColor(0x56, 0xb4, 0xe9), // sky blue
        RGBColor(0xd5, 0x5e, 0x00), // vermillion
        RGBColor(0xf0, 0xe4, 0x42), // yellow
    ];
    OKABE_ITO[i % OKABE_ITO.len()]
}

/// Title and axis labels shared by the heatmaps, the bars and the forest plot. An empty
/// string draws nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PlotLabels {
    /// Drawn centred at the top.
    pub title: String,
    /// The horizontal axis' description (heatmaps: what the columns are).
    pub x: String,
    /// The vertical axis' description (heatmaps: what the rows are).
    pub y: String,
}

impl PlotLabels {
    /// Convenience constructor.
    pub fn new(title: impl Into<String>, x: impl Into<String>, y: impl Into<String>) -> Self {
        PlotLabels {
            title: title.into(),
            x: x.into(),
            y: y.into(),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Shared drawing machinery (crate-private).

pub(crate) type DrawResult<DB> =
    Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// What is under a drawing.
pub(crate) enum Background<'a> {
    /// A white page.
    White,
    /// A screenshot covering the whole drawing: `png` is the original file (embedded as is
    /// in the SVG), `rgb` its decoded pixels (8-bit RGB, row-major, blitted into the PNG).
    Screenshot { png: &'a [u8], rgb: &'a [u8] },
}

/// A validated plot, ready to be drawn on any plotters backend.
pub(crate) trait Drawing {
    /// Width and height in pixels (the SVG's user units are the same pixels).
    fn size(&self) -> (u32, u32);
    /// What to put under the drawing; white unless overridden.
    fn background(&self) -> Background<'_> {
        Background::White
    }
    /// Draws everything but the background.
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

/// Draws `drawing` to `<stem>.svg` and `<stem>.png`.
pub(crate) fn render<D: Drawing>(stem: &Path, drawing: &D) -> Result<PlotFiles, PlotError> {
    ensure_font()?;
    let files = PlotFiles::from_stem(stem);
    if let Some(parent) = files.svg.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|source| PlotError::Io {
            path: parent.to_path_buf(),
            source,
        })?;
    }
    let svg = render_svg(drawing).map_err(|message| PlotError::Drawing {
        path: files.svg.clone(),
        message,
    })?;
    write_file(&files.svg, svg.as_bytes())?;
    let rgb = render_rgb(drawing).map_err(|message| PlotError::Drawing {
        path: files.png.clone(),
        message,
    })?;
    let (w, h) = drawing.size();
    let png = encode_png(&rgb, w, h).map_err(|source| PlotError::Encode {
        path: files.png.clone(),
        source,
    })?;
    write_file(&files.png, &png)?;
    Ok(files)
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), PlotError> {
    std::fs::write(path, bytes).map_err(|source| PlotError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// The drawing as an SVG document. A screenshot background becomes an `<image>` element
/// holding the original PNG as a `data:image/png;base64,` URI, placed first so that
/// everything else is drawn over it.
pub(crate) fn render_svg<D: Drawing>(drawing: &D) -> Result<String, String> {
    let size = drawing.size();
    let background = drawing.background();
    let mut svg = String::new();
    {
        let backend = text::FontFix {
            inner: SVGBackend::with_string(&mut svg, size),
            raster_text: false,
        };
        let root = backend.into_drawing_area();
        if let Background::White = background {
            root.fill(&WHITE).map_err(|e| e.to_string())?;
        }
        drawing.draw(&root).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    if let Background::Screenshot { png, .. } = background {
        // plotters-svg writes the opening `<svg ...>` tag, then a newline, on creation.
        let at = svg
            .find(">\n")
            .map(|i| i + 2)
            .ok_or_else(|| "plotters wrote no <svg> tag".to_string())?;
        let image = format!(
            "<image x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" preserveAspectRatio=\"none\" \
             href=\"data:image/png;base64,{}\"/>\n",
            size.0,
            size.1,
            base64(png)
        );
        svg.insert_str(at, &image);
    }
    Ok(svg)
}

/// The drawing as 8-bit RGB pixels, row-major.
pub(crate) fn render_rgb<D: Drawing>(drawing: &D) -> Result<Vec<u8>, String> {
    let (w, h) = drawing.size();
    let mut buf = vec![255u8; w as usize * h as usize * 3];
    {
        let backend = text::FontFix {
            inner: BitMapBackend::with_buffer(&mut buf, (w, h)),
            raster_text: true,
        };
        let root = backend.into_drawing_area();
        match drawing.background() {
            Background::White => root.fill(&WHITE).map_err(|e| e.to_string())?,
            Background::Screenshot { rgb, .. } => {
                let element = BitMapElement::<(i32, i32)>::with_ref((0, 0), (w, h), rgb)
                    .ok_or_else(|| "screenshot pixels do not match the drawing size".to_string())?;
                root.draw(&element).map_err(|e| e.to_string())?;
            }
        }
        drawing.draw(&root).map_err(|e| e.to_string())?;
        root.present().map_err(|e| e.to_string())?;
    }
    Ok(buf)
}

fn encode_png(rgb: &[u8], w: u32, h: u32) -> Result<Vec<u8>, image::ImageError> {
    use image::ImageEncoder;
    let mut out = Vec::new();
    image::codecs::png::PngEncoder::new(&mut out).write_image(
        rgb,
        w,
        h,
        image::ExtendedColorType::Rgb8,
    )?;
    Ok(out)
}

/// Standard base64 (RFC 4648, with padding).
pub(crate) fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Small text and layout helpers.

/// A text style in [`FONT_FAMILY`] with the given size (pixels), colour and anchor.
pub(crate) fn text_style(size: f64, colour: RGBColor, h: HPos, v: VPos) -> TextStyle<'static> {
    FontDesc::new(FontFamily::Name(FONT_FAMILY), size, FontStyle::Normal)
        .color(&colour)
        .pos(Pos::new(h, v))
}

/// The text's width in pixels in `style` (the same on both backends).
pub(crate) fn text_width(text: &str, style: &TextStyle) -> u32 {
    text::measure(text, style.font.get_size()).ceil() as u32
}

/// `text`, shortened with a trailing "…" until it fits in `max_width` pixels.
pub(crate) fn fit_text(text: &str, style: &TextStyle, max_width: u32) -> String {
    if text_width(text, style) <= max_width {
        return text.to_string();
    }
    let mut chars: Vec<char> = text.chars().collect();
    while !chars.is_empty() {
        chars.pop();
        let candidate: String = chars.iter().collect::<String>() + "…";
        if text_width(&candidate, style) <= max_width {
            return candidate;
        }
    }
    String::new()
}

/// The title, centred at the top, if it is not empty.
pub(crate) fn draw_title<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> DrawResult<DB> {
    if title.is_empty() {
        return Ok(());
    }
    let (w, _) = root.dim_in_pixel();
    let style = text_style(22.0, BLACK, HPos::Center, VPos::Center);
    let title = fit_text(title, &style, w.saturating_sub(20));
    root.draw_text(&title, &style, (w as i32 / 2, 22))
}

/// The page an empty plot draws: its title and a centred "no data".
pub(crate) fn draw_no_data<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> DrawResult<DB> {
    draw_title(root, title)?;
    let (w, h) = root.dim_in_pixel();
    let style = text_style(20.0, RGBColor(0x63, 0x63, 0x63), HPos::Center, VPos::Center);
    root.draw_text("no data", &style, (w as i32 / 2, (h as i32 + 44) / 2))
}

/// A linear `f64` axis whose ticks are exactly `keys` (used for the bars' groups and the
/// forest's rows). plotters' own `WithKeyPoints` over `f64` has no default value formatter,
/// which `configure_mesh` requires even when a label formatter is given.
pub(crate) struct KeyedAxis {
    inner: RangedCoordf64,
    keys: Vec<f64>,
}

impl KeyedAxis {
    pub(crate) fn new(range: std::ops::Range<f64>, keys: Vec<f64>) -> Self {
        KeyedAxis {
            inner: range.into(),
            keys,
        }
    }
}

impl Ranged for KeyedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.keys.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}

/// A rate as a percentage with one decimal, e.g. `92.5%`.
pub(crate) fn percent(rate: f64) -> String {
    format!("{:.1}%", rate * 100.0)
}
