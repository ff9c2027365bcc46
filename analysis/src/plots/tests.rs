//! Tests for every plot: each writes into a temporary directory, then the PNG is decoded
//! (size, non-trivial content, colours at known places, rendered text) and the SVG parsed
//! (well-formed, expected strings).

use std::collections::HashSet;
use std::path::Path;

use image::RgbImage;

use super::click_overlay::{CLICKED, INTENDED};
use super::*;

// ---------------------------------------------------------------------------------------
// Helpers.

fn png(path: &Path) -> RgbImage {
    image::open(path)
        .unwrap_or_else(|e| panic!("decoding {}: {e}", path.display()))
        .into_rgb8()
}

fn distinct_colours(img: &RgbImage) -> usize {
    img.pixels().map(|p| p.0).collect::<HashSet<_>>().len()
}

fn count_pixels(img: &RgbImage, pred: impl Fn([u8; 3]) -> bool) -> usize {
    img.pixels().filter(|p| pred(p.0)).count()
}

fn non_white(img: &RgbImage) -> usize {
    count_pixels(img, |p| p != [255, 255, 255])
}

fn dark(p: [u8; 3]) -> bool {
    p.iter().all(|&c| c < 100)
}

/// Dark pixels in the rows `y0..y1`.
fn dark_in_band(img: &RgbImage, y0: u32, y1: u32) -> usize {
    (y0..y1.min(img.height()))
        .flat_map(|y| (0..img.width()).map(move |x| (x, y)))
        .filter(|&(x, y)| dark(img.get_pixel(x, y).0))
        .count()
}

fn assert_non_trivial(img: &RgbImage, min_ink: usize) {
    let ink = non_white(img);
    assert!(
        ink >= min_ink,
        "only {ink} non-white pixels (want {min_ink})"
    );
    let colours = distinct_colours(img);
    assert!(colours >= 2, "only {colours} distinct colours");
}

fn svg_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap()
}

/// The trimmed contents of every `<text>` element, in document order; panics unless the
/// document is well-formed SVG.
fn svg_texts(svg: &str) -> Vec<String> {
    let doc = roxmltree::Document::parse(svg).expect("well-formed SVG");
    assert_eq!(doc.root_element().tag_name().name(), "svg");
    doc.descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.text().unwrap_or("").trim().to_string())
        .collect()
}

fn assert_has_texts(texts: &[String], want: &[&str]) {
    for w in want {
        assert!(texts.iter().any(|t| t == w), "no <text> {w:?} in {texts:?}");
    }
}

fn svg_size(svg: &str) -> (u32, u32) {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let root = doc.root_element();
    let get = |a: &str| root.attribute(a).unwrap().parse().unwrap();
    (get("width"), get("height"))
}

fn reddish(p: [u8; 3]) -> bool {
    p[0] > 150 && p[1] < 100 && p[2] < 100
}

/// Red in hue, light or dark.
fn red_hue(p: [u8; 3]) -> bool {
    p[0] > 80 && p[0] > 2 * p[1] && p[0] > 2 * p[2]
}

fn greenish(p: [u8; 3]) -> bool {
    p[1] > 120 && p[0] < 80 && p[2] < 120
}

fn bluish(p: [u8; 3]) -> bool {
    p[2] > 80 && p[2] > p[0] + 40
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

fn cell(row: &str, column: &str, numerator: u64, denominator: u64) -> HeatmapCell {
    HeatmapCell {
        row: row.into(),
        column: column.into(),
        numerator,
        denominator,
    }
}

// ---------------------------------------------------------------------------------------
// Fixtures.

struct HeatmapFixture {
    cells: Vec<HeatmapCell>,
    rows: Vec<String>,
    columns: Vec<String>,
    labels: PlotLabels,
}

/// Three faults (deliberately not in alphabetical order) × three policies; (stale-dom,
/// unverified) has nothing fired and (slow-network, outcome) is missing.
fn heatmap_fixture(title: &str) -> HeatmapFixture {
    HeatmapFixture {
        rows: names(&["stale-dom", "click-offset", "slow-network"]),
        columns: names(&["unverified", "outcome", "grid"]),
        cells: vec![
            cell("stale-dom", "unverified", 0, 0),
            cell("stale-dom", "outcome", 37, 40),
            cell("stale-dom", "grid", 40, 40),
            cell("click-offset", "unverified", 3, 40),
            cell("click-offset", "outcome", 20, 40),
            cell("click-offset", "grid", 39, 40),
            cell("slow-network", "unverified", 0, 12),
            cell("slow-network", "grid", 12, 12),
        ],
        labels: PlotLabels::new(title, "policy", "fault"),
    }
}

fn detection(dir: &Path, name: &str, fx: &HeatmapFixture) -> PlotFiles {
    heatmap(
        &fx.cells,
        &fx.rows,
        &fx.columns,
        &fx.labels,
        RateSense::HigherIsBetter,
        dir.join(name),
    )
    .unwrap()
}

fn bar_fixture() -> Vec<BarPoint> {
    let mut points = Vec::new();
    for (g, group) in ["search-form", "checkout", "login"].iter().enumerate() {
        for (s, series) in ["unverified", "outcome", "grid"].iter().enumerate() {
            let point = 0.3 + 0.2 * s as f64 + 0.05 * g as f64;
            points.push(BarPoint {
                group: group.to_string(),
                series: series.to_string(),
                point,
                lower: point - 0.1,
                upper: (point + 0.1).min(1.0),
                n: 40 + g as u64,
            });
        }
    }
    points
}

fn forest_fixture() -> Vec<ForestRow> {
    vec![
        ForestRow {
            label: "outcome − unverified, grid".into(),
            point: 0.125,
            lower: 0.05,
            upper: 0.2,
        },
        ForestRow {
            label: "grid − unverified, grid".into(),
            point: -0.02,
            lower: -0.1,
            upper: 0.06,
        },
        ForestRow {
            label: "outcome − grid, list".into(),
            point: 0.3,
            lower: 0.21,
            upper: 0.39,
        },
    ]
}

/// A 900×600 "page": off-white, with a blue button around the intended point and a grey
/// box around the clicked point, so that the markers' colours must come from the overlay.
fn screenshot_png() -> Vec<u8> {
    let img = RgbImage::from_fn(900, 600, |x, y| {
        if (540..660).contains(&x) && (380..420).contains(&y) {
            image::Rgb([0x1f, 0x5f, 0xbf])
        } else if (400..500).contains(&x) && (280..320).contains(&y) {
            image::Rgb([0xc0, 0xc0, 0xc0])
        } else {
            image::Rgb([0xf4, 0xf4, 0xf8 - (y / 60) as u8])
        }
    });
    let mut out = std::io::Cursor::new(Vec::new());
    img.write_to(&mut out, image::ImageFormat::Png).unwrap();
    out.into_inner()
}

// ---------------------------------------------------------------------------------------
// Shared pieces.

#[test]
fn base64_matches_rfc4648_vectors() {
    for (input, want) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(base64(input.as_bytes()), want, "base64({input:?})");
    }
    assert_eq!(base64(&[0xff, 0xfe, 0xfd]), "//79");
}

#[test]
fn colour_scales_run_from_light_to_dark() {
    let luminance = |c: RGBColor| 0.2126 * c.0 as f64 + 0.7152 * c.1 as f64 + 0.0722 * c.2 as f64;
    for scale in [ColourScale::Blues, ColourScale::Reds] {
        let mut previous = f64::INFINITY;
        for i in 0..=20 {
            let l = luminance(scale.colour(i as f64 / 20.0));
            assert!(l < previous, "{scale:?} not darker at {i}/20");
            previous = l;
        }
        assert_eq!(scale.colour(-1.0), scale.colour(0.0));
        assert_eq!(scale.colour(2.0), scale.colour(1.0));
        assert_eq!(scale.colour(f64::NAN), scale.colour(0.0));
    }
    assert!(bluish(rgb(ColourScale::Blues.colour(1.0))));
    assert!(red_hue(rgb(ColourScale::Reds.colour(1.0))));
    assert_eq!(text_colour_on(ColourScale::Blues.colour(1.0)), WHITE);
    assert_eq!(text_colour_on(ColourScale::Blues.colour(0.0)), BLACK);
}

fn rgb(c: RGBColor) -> [u8; 3] {
    [c.0, c.1, c.2]
}

#[test]
fn stems_get_extensions_appended() {
    let files = PlotFiles::from_stem(Path::new("out/detection.v2"));
    assert_eq!(files.svg, Path::new("out/detection.v2.svg"));
    assert_eq!(files.png, Path::new("out/detection.v2.png"));
}

#[test]
fn missing_parent_directories_are_created() {
    let dir = tempfile::tempdir().unwrap();
    let fx = heatmap_fixture("t");
    let files = detection(dir.path(), "a/b/heatmap", &fx);
    assert!(files.svg.is_file() && files.png.is_file());
}

// ---------------------------------------------------------------------------------------
// Heatmaps.

#[test]
fn detection_heatmap_draws_counts_rates_and_na() {
    let dir = tempfile::tempdir().unwrap();
    let fx = heatmap_fixture("Detection by fault and policy");
    let files = detection(dir.path(), "detection_heatmap", &fx);
    assert_eq!(files.svg, dir.path().join("detection_heatmap.svg"));
    assert_eq!(files.png, dir.path().join("detection_heatmap.png"));

    let img = png(&files.png);
    assert_eq!(img.dimensions(), (900, 120 + 60 * 3));
    assert_non_trivial(&img, 20_000);

    let svg = svg_text(&files.svg);
    assert_eq!(svg_size(&svg), (900, 300));
    let texts = svg_texts(&svg);
    assert_has_texts(
        &texts,
        &[
            "Detection by fault and policy",
            "policy",
            "fault",
            "37/40",
            "92.5%",
            "40/40",
            "100.0%",
            "3/40",
            "7.5%",
            "0/0",
            "n/a",
            "0/12",
            "0.0%",
            "stale-dom",
            "unverified",
            "100%",
            "0%",
        ],
    );
    // The given 0/0 cell and the missing (slow-network, outcome) cell both say n/a.
    assert_eq!(texts.iter().filter(|t| *t == "n/a").count(), 2);

    // A fully caught cell is dark blue, away from its text: (stale-dom, grid) is row 0,
    // column 2; sample near its top-left corner.
    let grid = cell_corner_pixel(&img, &svg, "40/40");
    assert!(bluish(grid) && grid[0] < 60, "40/40 cell is {grid:?}");
    // The n/a cell (stale-dom, unverified) is light grey.
    let na = cell_corner_pixel(&img, &svg, "0/0");
    assert!(
        na.iter().all(|&c| c > 190) && na[0] == na[2],
        "n/a cell is {na:?}"
    );
}

/// The pixel 6 px right of the left edge of the cell whose first line is `label`, at the
/// top of the cell (found through the label's position in the SVG).
fn cell_corner_pixel(img: &RgbImage, svg: &str, label: &str) -> [u8; 3] {
    let doc = roxmltree::Document::parse(svg).unwrap();
    let node = doc
        .descendants()
        .find(|n| n.has_tag_name("text") && n.text().map(str::trim) == Some(label))
        .unwrap();
    let x: i32 = node.attribute("x").unwrap().parse().unwrap();
    let y: i32 = node.attribute("y").unwrap().parse().unwrap();
    // The first line is 9 px above the cell's centre; cells are 60 px high.
    let top = y + 9 - 30;
    img.get_pixel((x - 20) as u32, (top + 5) as u32).0
}

#[test]
fn heatmap_keeps_the_given_row_and_column_order() {
    let dir = tempfile::tempdir().unwrap();
    let fx = heatmap_fixture("order");
    let files = detection(dir.path(), "h", &fx);
    let svg = svg_text(&files.svg);
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let position = |label: &str, attr: &str| -> i32 {
        doc.descendants()
            .find(|n| n.has_tag_name("text") && n.text().map(str::trim) == Some(label))
            .unwrap_or_else(|| panic!("no {label}"))
            .attribute(attr)
            .unwrap()
            .parse()
            .unwrap()
    };
    let rows: Vec<i32> = fx.rows.iter().map(|r| position(r, "y")).collect();
    assert!(
        rows.windows(2).all(|w| w[0] < w[1]),
        "rows drawn at {rows:?}"
    );
    let columns: Vec<i32> = fx.columns.iter().map(|c| position(c, "x")).collect();
    assert!(
        columns.windows(2).all(|w| w[0] < w[1]),
        "columns drawn at {columns:?}"
    );
}

#[test]
fn false_alarm_heatmap_uses_the_red_scale() {
    let dir = tempfile::tempdir().unwrap();
    let rows = names(&["search-form", "checkout"]);
    let columns = names(&["unverified", "outcome"]);
    let cells = vec![
        cell("search-form", "unverified", 0, 20),
        cell("search-form", "outcome", 20, 20),
        cell("checkout", "unverified", 5, 20),
        cell("checkout", "outcome", 0, 0),
    ];
    let labels = PlotLabels::new("False alarms", "policy", "task");
    let files = heatmap(
        &cells,
        &rows,
        &columns,
        &labels,
        RateSense::LowerIsBetter,
        dir.path().join("fa"),
    )
    .unwrap();
    let img = png(&files.png);
    assert_eq!(img.dimensions(), (900, 120 + 60 * 2));
    assert_non_trivial(&img, 10_000);
    let svg = svg_text(&files.svg);
    assert_has_texts(
        &svg_texts(&svg),
        &[
            "False alarms",
            "task",
            "20/20",
            "100.0%",
            "0/20",
            "0.0%",
            "5/20",
            "25.0%",
            "n/a",
        ],
    );
    let all = cell_corner_pixel(&img, &svg, "20/20");
    assert!(red_hue(all), "20/20 false alarms cell is {all:?}");
    let none = cell_corner_pixel(&img, &svg, "0/20");
    assert!(
        none.iter().all(|&c| c > 235),
        "0/20 false alarms cell is {none:?}"
    );

    // The same cells as a detection heatmap are blue instead: one code path, one parameter.
    let files = heatmap(
        &cells,
        &rows,
        &columns,
        &labels,
        RateSense::HigherIsBetter,
        dir.path().join("d"),
    )
    .unwrap();
    let all = cell_corner_pixel(&png(&files.png), &svg_text(&files.svg), "20/20");
    assert!(bluish(all), "20/20 detection cell is {all:?}");
}

#[test]
fn heatmap_rejects_bad_cells_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let rows = names(&["a", "b"]);
    let columns = names(&["x"]);
    let labels = PlotLabels::new("t", "", "");
    let bad: Vec<(Vec<HeatmapCell>, Vec<String>, &str)> = vec![
        (
            vec![cell("a", "x", 5, 4)],
            rows.clone(),
            "above its denominator",
        ),
        (
            vec![cell("c", "x", 1, 4)],
            rows.clone(),
            "not in the row list",
        ),
        (
            vec![cell("a", "y", 1, 4)],
            rows.clone(),
            "not in the column list",
        ),
        (
            vec![cell("a", "x", 1, 4), cell("a", "x", 2, 4)],
            rows.clone(),
            "given twice",
        ),
        (vec![], names(&["a", "a"]), "listed twice"),
    ];
    for (i, (cells, rows, want)) in bad.into_iter().enumerate() {
        let stem = dir.path().join(format!("bad{i}"));
        let err = heatmap(
            &cells,
            &rows,
            &columns,
            &labels,
            RateSense::HigherIsBetter,
            &stem,
        )
        .unwrap_err();
        assert!(matches!(err, PlotError::Input(_)), "{err:?}");
        assert!(err.to_string().contains(want), "{err} lacks {want:?}");
        assert!(!PlotFiles::from_stem(&stem).svg.exists());
        assert!(!PlotFiles::from_stem(&stem).png.exists());
    }
}

#[test]
fn heatmap_without_rows_or_columns_says_no_data() {
    let dir = tempfile::tempdir().unwrap();
    let labels = PlotLabels::new("Empty detection", "policy", "fault");
    for (i, (rows, columns)) in [
        (vec![], vec![]),
        (vec![], names(&["x"])),
        (names(&["a"]), vec![]),
    ]
    .into_iter()
    .enumerate()
    {
        let files = heatmap(
            &[],
            &rows,
            &columns,
            &labels,
            RateSense::HigherIsBetter,
            dir.path().join(format!("e{i}")),
        )
        .unwrap();
        let img = png(&files.png);
        assert_eq!(img.dimensions(), (900, 180));
        assert_non_trivial(&img, 200);
        assert_has_texts(
            &svg_texts(&svg_text(&files.svg)),
            &["Empty detection", "no data"],
        );
    }
}

#[test]
fn heatmap_with_rows_but_no_cells_is_all_na() {
    let dir = tempfile::tempdir().unwrap();
    let files = heatmap(
        &[],
        &names(&["a", "b"]),
        &names(&["x", "y"]),
        &PlotLabels::default(),
        RateSense::HigherIsBetter,
        dir.path().join("na"),
    )
    .unwrap();
    let texts = svg_texts(&svg_text(&files.svg));
    assert_eq!(texts.iter().filter(|t| *t == "n/a").count(), 4);
    assert_eq!(png(&files.png).dimensions(), (900, 240));
}

#[test]
fn long_names_are_shortened_to_fit() {
    let dir = tempfile::tempdir().unwrap();
    let long = "a-very-long-fault-name-that-would-never-fit-in-the-row-label-area-of-the-heatmap";
    let files = heatmap(
        &[cell(long, "x", 1, 2)],
        &names(&[long]),
        &names(&["x"]),
        &PlotLabels::new("t", "", ""),
        RateSense::HigherIsBetter,
        dir.path().join("long"),
    )
    .unwrap();
    let texts = svg_texts(&svg_text(&files.svg));
    assert!(texts
        .iter()
        .any(|t| t.ends_with('…') && long.starts_with(t.trim_end_matches('…'))));
    assert!(!texts.iter().any(|t| t == long));
}

// ---------------------------------------------------------------------------------------
// Recovery bars.

#[test]
fn recovery_bars_draw_bars_whiskers_and_n() {
    let dir = tempfile::tempdir().unwrap();
    let labels = PlotLabels::new("Recovery by task", "task", "success rate");
    let files = recovery_bars(&bar_fixture(), &labels, dir.path().join("bars")).unwrap();
    let img = png(&files.png);
    assert_eq!(img.dimensions(), (1000, 500));
    assert_non_trivial(&img, 20_000);
    for s in 0..3 {
        let c = rgb(series_colour(s));
        let n = count_pixels(&img, |p| p == c);
        assert!(n > 500, "series {s}'s colour covers only {n} pixels");
    }
    let svg = svg_text(&files.svg);
    assert_eq!(svg_size(&svg), (1000, 500));
    assert_has_texts(
        &svg_texts(&svg),
        &[
            "Recovery by task",
            "task",
            "success rate",
            "search-form",
            "checkout",
            "login",
            "unverified",
            "outcome",
            "grid",
            "n=40",
            "n=41",
            "n=42",
            "0%",
            "100%",
        ],
    );
    // Three "n=" labels per group.
    let texts = svg_texts(&svg);
    assert_eq!(texts.iter().filter(|t| t.starts_with("n=")).count(), 9);
}

#[test]
fn recovery_bars_leave_a_gap_for_a_missing_series() {
    let dir = tempfile::tempdir().unwrap();
    let mut points = bar_fixture();
    points.retain(|p| !(p.group == "checkout" && p.series == "outcome"));
    let files = recovery_bars(&points, &PlotLabels::default(), dir.path().join("gap")).unwrap();
    let texts = svg_texts(&svg_text(&files.svg));
    assert_eq!(texts.iter().filter(|t| t.starts_with("n=")).count(), 8);
}

#[test]
fn recovery_bars_reject_bad_points() {
    let dir = tempfile::tempdir().unwrap();
    let base = bar_fixture()[0].clone();
    let variants = [
        BarPoint {
            point: f64::NAN,
            ..base.clone()
        },
        BarPoint {
            upper: 1.5,
            ..base.clone()
        },
        BarPoint {
            lower: 0.9,
            upper: 0.1,
            ..base.clone()
        },
    ];
    for (i, p) in variants.into_iter().enumerate() {
        let err = recovery_bars(
            &[p],
            &PlotLabels::default(),
            dir.path().join(format!("b{i}")),
        )
        .unwrap_err();
        assert!(matches!(err, PlotError::Input(_)), "{err:?}");
    }
    let err = recovery_bars(
        &[base.clone(), base],
        &PlotLabels::default(),
        dir.path().join("d"),
    )
    .unwrap_err();
    assert!(err.to_string().contains("given twice"), "{err}");
}

#[test]
fn recovery_bars_without_points_say_no_data() {
    let dir = tempfile::tempdir().unwrap();
    let labels = PlotLabels::new("Recovery", "task", "rate");
    let files = recovery_bars(&[], &labels, dir.path().join("none")).unwrap();
    assert_eq!(png(&files.png).dimensions(), (1000, 500));
    assert_has_texts(&svg_texts(&svg_text(&files.svg)), &["Recovery", "no data"]);
}

// ---------------------------------------------------------------------------------------
// Forest.

#[test]
fn forest_draws_rows_intervals_and_zero_line() {
    let dir = tempfile::tempdir().unwrap();
    let labels = PlotLabels::new("Paired differences", "difference in success rate", "");
    let files = forest(&forest_fixture(), &labels, dir.path().join("forest")).unwrap();
    let img = png(&files.png);
    assert_eq!(img.dimensions(), (900, 120 + 40 * 3));
    assert_non_trivial(&img, 5_000);
    let svg = svg_text(&files.svg);
    assert_eq!(svg_size(&svg), (900, 240));
    let texts = svg_texts(&svg);
    assert_has_texts(
        &texts,
        &[
            "Paired differences",
            "difference in success rate",
            "outcome − unverified, grid",
            "grid − unverified, grid",
            "outcome − grid, list",
            "+0.125 [+0.050, +0.200]",
            "-0.020 [-0.100, +0.060]",
            "estimate [interval]",
        ],
    );
    // Rows top to bottom in the given order.
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let y_of = |label: &str| -> i32 {
        doc.descendants()
            .find(|n| n.has_tag_name("text") && n.text().map(str::trim) == Some(label))
            .unwrap()
            .attribute("y")
            .unwrap()
            .parse()
            .unwrap()
    };
    let ys: Vec<i32> = forest_fixture().iter().map(|r| y_of(&r.label)).collect();
    assert!(ys.windows(2).all(|w| w[0] < w[1]), "rows at {ys:?}");
    // The interval excluding zero is dark blue, the one including it grey.
    assert!(count_pixels(&img, |p| p == [0x08, 0x51, 0x9c]) > 100);
    assert!(count_pixels(&img, |p| p == [0x66, 0x66, 0x66]) > 50);
}

#[test]
fn forest_axis_spans_the_intervals_and_zero() {
    let rows = vec![ForestRow {
        label: "r".into(),
        point: 0.3,
        lower: 0.2,
        upper: 0.4,
    }];
    let model = super::forest::ForestModel::new(&rows, &PlotLabels::default()).unwrap();
    let (lo, hi) = model.x_range();
    assert!(lo < 0.0 && lo > -0.05, "{lo}");
    assert!(hi > 0.4 && hi < 0.45, "{hi}");

    let rows = vec![ForestRow {
        label: "r".into(),
        point: 0.0,
        lower: 0.0,
        upper: 0.0,
    }];
    let model = super::forest::ForestModel::new(&rows, &PlotLabels::default()).unwrap();
    assert_eq!(model.x_range(), (-0.05, 0.05));
}

#[test]
fn forest_rejects_bad_rows_and_handles_no_rows() {
    let dir = tempfile::tempdir().unwrap();
    let bad = ForestRow {
        label: "bad".into(),
        point: 0.0,
        lower: 0.2,
        upper: -0.2,
    };
    let err = forest(&[bad], &PlotLabels::default(), dir.path().join("bad")).unwrap_err();
    assert!(matches!(err, PlotError::Input(_)), "{err:?}");
    let inf = ForestRow {
        label: "inf".into(),
        point: f64::INFINITY,
        lower: 0.0,
        upper: 1.0,
    };
    assert!(forest(&[inf], &PlotLabels::default(), dir.path().join("inf")).is_err());

    let labels = PlotLabels::new("No comparisons", "difference", "");
    let files = forest(&[], &labels, dir.path().join("none")).unwrap();
    assert_eq!(png(&files.png).dimensions(), (900, 160));
    assert_has_texts(
        &svg_texts(&svg_text(&files.svg)),
        &["No comparisons", "no data"],
    );
}

// ---------------------------------------------------------------------------------------
// Click overlay.

#[test]
fn click_overlay_marks_both_points_over_the_screenshot() {
    let dir = tempfile::tempdir().unwrap();
    let shot = screenshot_png();
    let files = click_overlay(
        &shot,
        PixelPoint::new(600.0, 400.0),
        PixelPoint::new(450.0, 300.0),
        "Click on 'Submit' missed",
        dir.path().join("overlay"),
    )
    .unwrap();

    let img = png(&files.png);
    assert_eq!(img.dimensions(), (900, 600));
    assert!(distinct_colours(&img) > 10);
    let clicked = img.get_pixel(450, 300).0;
    assert!(
        reddish(clicked),
        "pixel at the clicked point is {clicked:?}"
    );
    let intended = img.get_pixel(600, 400).0;
    assert!(
        greenish(intended),
        "pixel at the intended point is {intended:?}"
    );
    // The screenshot is the background: its blue button and its page colour survive.
    assert_eq!(img.get_pixel(545, 385).0, [0x1f, 0x5f, 0xbf]);
    assert_eq!(img.get_pixel(890, 590).0, [0xf4, 0xf4, 0xf8 - 9]);
    assert!(count_pixels(&img, |p| p == rgb(CLICKED)) > 100);
    assert!(count_pixels(&img, |p| p == rgb(INTENDED)) > 100);

    let svg = svg_text(&files.svg);
    assert_eq!(svg_size(&svg), (900, 600));
    assert_has_texts(
        &svg_texts(&svg),
        &[
            "intended (600, 400)",
            "clicked (450, 300)",
            "Click on 'Submit' missed",
            "intended point",
            "clicked point",
            "miss: 180.3 px",
        ],
    );
    // The screenshot is embedded as the first element, as the original PNG bytes.
    let doc = roxmltree::Document::parse(&svg).unwrap();
    let first = doc.root_element().first_element_child().unwrap();
    assert!(first.has_tag_name("image"), "first element is {first:?}");
    assert_eq!(first.attribute("width"), Some("900"));
    assert_eq!(first.attribute("height"), Some("600"));
    let href = first.attribute("href").unwrap();
    assert_eq!(href, format!("data:image/png;base64,{}", base64(&shot)));
    assert_eq!(
        doc.descendants()
            .filter(|n| n.has_tag_name("image"))
            .count(),
        1
    );
    // No pixel-by-pixel fallback: the SVG is about the size of the embedded PNG.
    assert!(
        svg.len() < base64(&shot).len() + 20_000,
        "SVG is {} bytes",
        svg.len()
    );
}

#[test]
fn click_overlay_formats_fractional_coordinates() {
    let dir = tempfile::tempdir().unwrap();
    let files = click_overlay(
        &screenshot_png(),
        PixelPoint::new(10.25, 5.0),
        PixelPoint::new(899.96, 599.0),
        "",
        dir.path().join("edge"),
    )
    .unwrap();
    let texts = svg_texts(&svg_text(&files.svg));
    assert_has_texts(&texts, &["intended (10.3, 5)", "clicked (900, 599)"]);
    let img = png(&files.png);
    assert!(reddish(img.get_pixel(899, 599).0));
    assert!(greenish(img.get_pixel(10, 5).0));
}

#[test]
fn click_overlay_rejects_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let p = PixelPoint::new(1.0, 1.0);
    let err = click_overlay(b"not a png", p, p, "t", dir.path().join("x")).unwrap_err();
    assert!(matches!(err, PlotError::Screenshot(_)), "{err:?}");
    assert!(!dir.path().join("x.svg").exists());
    let nan = PixelPoint::new(f64::NAN, 1.0);
    let err = click_overlay(&screenshot_png(), nan, p, "t", dir.path().join("y")).unwrap_err();
    assert!(matches!(err, PlotError::Input(_)), "{err:?}");
}

#[test]
fn click_overlay_composites_transparent_screenshots_over_white() {
    let dir = tempfile::tempdir().unwrap();
    let img = image::RgbaImage::from_pixel(300, 200, image::Rgba([0, 0, 0, 0]));
    let mut bytes = std::io::Cursor::new(Vec::new());
    img.write_to(&mut bytes, image::ImageFormat::Png).unwrap();
    let files = click_overlay(
        &bytes.into_inner(),
        PixelPoint::new(200.0, 120.0),
        PixelPoint::new(100.0, 150.0),
        "small",
        dir.path().join("t"),
    )
    .unwrap();
    let out = png(&files.png);
    assert_eq!(out.dimensions(), (300, 200));
    assert_eq!(out.get_pixel(299, 0).0, [255, 255, 255]);
}

// ---------------------------------------------------------------------------------------
// Text and determinism across all plots.

/// Renders every plot into `dir` with `title` and returns the files.
fn render_all(dir: &Path, title: &str) -> Vec<PlotFiles> {
    let fx = heatmap_fixture(title);
    let labels = PlotLabels::new(title, "x", "y");
    vec![
        detection(dir, "detection", &fx),
        heatmap(
            &fx.cells,
            &fx.rows,
            &fx.columns,
            &fx.labels,
            RateSense::LowerIsBetter,
            dir.join("fa"),
        )
        .unwrap(),
        recovery_bars(&bar_fixture(), &labels, dir.join("bars")).unwrap(),
        forest(&forest_fixture(), &labels, dir.join("forest")).unwrap(),
        click_overlay(
            &screenshot_png(),
            PixelPoint::new(600.0, 400.0),
            PixelPoint::new(450.0, 300.0),
            title,
            dir.join("overlay"),
        )
        .unwrap(),
        heatmap(
            &[],
            &[],
            &[],
            &labels,
            RateSense::HigherIsBetter,
            dir.join("empty"),
        )
        .unwrap(),
    ]
}

#[test]
fn same_input_gives_byte_identical_files() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let first = render_all(a.path(), "Determinism");
    let second = render_all(b.path(), "Determinism");
    for (x, y) in first.iter().zip(&second) {
        assert_eq!(
            std::fs::read(&x.svg).unwrap(),
            std::fs::read(&y.svg).unwrap(),
            "{x:?}"
        );
        assert_eq!(
            std::fs::read(&x.png).unwrap(),
            std::fs::read(&y.png).unwrap(),
            "{x:?}"
        );
    }
}

#[test]
fn titles_are_rendered_as_pixels() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let with = render_all(a.path(), "A Title With Ink");
    let without = render_all(b.path(), "");
    for (w, wo) in with.iter().zip(&without) {
        let (w_img, wo_img) = (png(&w.png), png(&wo.png));
        assert_eq!(w_img.dimensions(), wo_img.dimensions());
        let differing = w_img
            .pixels()
            .zip(wo_img.pixels())
            .filter(|(p, q)| p != q)
            .count();
        assert!(
            differing > 300,
            "{}: only {differing} pixels differ",
            w.png.display()
        );
    }
    // The non-overlay plots draw their title in the top band (centred 22 px down): glyph
    // pixels are dark there, and there are none without a title.
    for (w, wo) in with
        .iter()
        .zip(&without)
        .filter(|(w, _)| !w.png.ends_with("overlay.png"))
    {
        let ink = dark_in_band(&png(&w.png), 8, 29);
        assert!(
            ink > 200,
            "{}: {ink} dark pixels in the title band",
            w.png.display()
        );
        assert_eq!(
            dark_in_band(&png(&wo.png), 8, 29),
            0,
            "{}",
            wo.png.display()
        );
    }
}

/// Writes every plot to `$FAULTLINE_PLOT_GALLERY` for looking at them:
/// `FAULTLINE_PLOT_GALLERY=/tmp/g cargo test -p faultline-analysis --lib plots -- --ignored`.
#[test]
#[ignore]
fn gallery() {
    let Some(dir) = std::env::var_os("FAULTLINE_PLOT_GALLERY") else {
        return;
    };
    let dir = Path::new(&dir);
    render_all(dir, "Gallery: a sample title");
    let fx = heatmap_fixture("Faults caught / fired");
    detection(dir, "detection_full", &fx);
    let files = render_all(&dir.join("untitled"), "");
    assert!(!files.is_empty());
}
