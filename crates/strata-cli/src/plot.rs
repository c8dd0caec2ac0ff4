//! Line plots of a figure's sweep (and grouped bar charts of per-type
//! figures), drawn with `plotters` into a PNG.
//!
//! ```text
//!   y ▲  ●──●──●  series A        one line (with points) per series,
//!     │  ○──○     series B        x = the swept parameter,
//!     └──────────▶ x              y = the figure's metric
//! ```
//!
//! The font is DejaVu Sans, bundled (assets/, with its license) and
//! registered with plotters' `ab_glyph` backend, so plots build on a machine
//! with no fontconfig or freetype.

use std::path::Path;
use std::sync::Once;

use plotters::coord::ranged1d::{KeyPointHint, NoDefaultFormatting, ValueFormatter};
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
pub(crate) const FAMILY: &str = "sans-serif";

pub(crate) fn register() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // The bundled file is a valid TTF; if it ever were not, text would
        // be missing from the plot, which the PNG test would not hide.
        let _ = register_font(FAMILY, FontStyle::Normal, FONT);
    });
}

/// One line of a plot.
pub struct Line {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// Where the x axis puts its ticks.
#[derive(Clone, Copy)]
pub enum XTicks<'a> {
    /// At the x values a sweep ran (a figure's points), labelled as given.
    Values(&'a [f64]),
    /// Round steps over the data's range (time, lengths).
    Auto,
}

/// Okabe and Ito's colour-blind-safe palette (their yellow, too pale on
/// white, left out); beyond seven lines the marker changes shape.
pub(crate) const PALETTE: [RGBColor; 7] = [
    RGBColor(0, 114, 178),   // blue
    RGBColor(213, 94, 0),    // vermillion
    RGBColor(0, 158, 115),   // bluish green
    RGBColor(204, 121, 167), // reddish purple
    RGBColor(230, 159, 0),   // orange
    RGBColor(86, 180, 233),  // sky blue
    RGBColor(0, 0, 0),       // black
];

pub(crate) const SIZE: (u32, u32) = (1100, 560);
/// The plot's share of the width; the legend takes the rest, outside the
/// data.
const PLOT_WIDTH: u32 = 800;

/// Draws `lines` into a PNG at `path`, ticks where the data has them.
pub fn line_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
) -> Result<(), String> {
    line_chart_ticks(path, title, x_label, y_label, lines, XTicks::Auto)
}

/// [`line_chart`] with the x ticks chosen.
pub fn line_chart_ticks(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
    ticks: XTicks<'_>,
) -> Result<(), String> {
    register();
    let err = |e: &dyn std::fmt::Display| format!("plotting {}: {e}", path.display());
    let mut rgb = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw(root, title, x_label, y_label, lines, ticks).map_err(|e| err(&e))?;
    }
    write_png(path, &rgb).map_err(|e| err(&e))
}

/// Encodes an RGB image of `SIZE` as a PNG file. plotters draws into the
/// buffer; encoding it here with the `png` crate instead of plotters'
/// `bitmap_encoder` feature keeps the `image` crate (and its JPEG, GIF
/// and TIFF codecs) out of the build (issue 40, item 15).
pub(crate) fn write_png(path: &Path, rgb: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
    let file = std::io::BufWriter::new(std::fs::File::create(path)?);
    let mut enc = png::Encoder::new(file, SIZE.0, SIZE.1);
    enc.set_color(png::ColorType::Rgb);
    enc.set_depth(png::BitDepth::Eight);
    let mut w = enc.write_header()?;
    w.write_image_data(rgb)?;
    w.finish()?;
    Ok(())
}

/// The same plot as SVG text (what the tests read: titles and tick labels
/// are text there).
#[cfg(test)]
pub fn line_chart_svg(
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
    ticks: XTicks<'_>,
) -> Result<String, String> {
    register();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        draw(root, title, x_label, y_label, lines, ticks).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
    ticks: XTicks<'_>,
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let root = root.titled(title, (FAMILY, 22))?;
    let (plot, legend) = root.split_horizontally(PLOT_WIDTH);
    let all = lines.iter().flat_map(|l| l.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if let XTicks::Values(v) = ticks {
        for &x in v {
            x0 = x0.min(x);
            x1 = x1.max(x);
        }
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 - x0 < 1e-9 {
        x1 = x0 + 1.0;
    }
    let key_points = match ticks {
        XTicks::Values(v) => thin(v, 12),
        XTicks::Auto => round_steps(x0, x1, 10),
    };
    // Integer sweeps (threads, attributes) print no ".0".
    let integers = key_points.iter().all(|x| x.fract() == 0.0);
    let pad = (x1 - x0) * 0.03;
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.1 };
    let mut chart = ChartBuilder::on(&plot)
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(
            XAxis {
                range: x0 - pad..x1 + pad,
                ticks: key_points,
                integers,
            },
            0.0..y1,
        )?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 17))
        .y_label_formatter(&|v| human(*v))
        .draw()?;
    let style_of = |i: usize| {
        let color = PALETTE[i % PALETTE.len()];
        (color, ShapeStyle::from(color).stroke_width(2))
    };
    for (i, line) in lines.iter().enumerate() {
        let (color, style) = style_of(i);
        chart.draw_series(LineSeries::new(line.points.iter().copied(), style))?;
        let filled = ShapeStyle::from(color).filled();
        let round = (i / PALETTE.len()).is_multiple_of(2);
        chart.draw_series(line.points.iter().map(|&p| {
            if round {
                EmptyElement::at(p) + Circle::new((0, 0), 4, filled)
            } else {
                EmptyElement::at(p) + Circle::new((0, 0), 4, style)
            }
        }))?;
    }
    // The legend, beside the plot: one row per line.
    for (i, line) in lines.iter().enumerate() {
        let (color, style) = style_of(i);
        let y = 40 + 26 * i as i32;
        legend.draw(&PathElement::new([(8, y), (36, y)], style))?;
        legend.draw(&Circle::new((22, y), 4, ShapeStyle::from(color).filled()))?;
        legend.draw(&Text::new(
            line.label.clone(),
            (44, y - 8),
            (FAMILY, 15).into_font(),
        ))?;
    }
    root.present()
}

/// One series of a bar chart: a value per category.
pub struct Bars {
    pub label: String,
    pub values: Vec<f64>,
}

/// Draws grouped bars into a PNG at `path`: one group per category (in
/// order), one bar per series in each group, the legend beside the plot.
pub fn bar_chart(
    path: &Path,
    title: &str,
    y_label: &str,
    categories: &[&str],
    series: &[Bars],
) -> Result<(), String> {
    register();
    let err = |e: &dyn std::fmt::Display| format!("plotting {}: {e}", path.display());
    let mut rgb = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw_bars(root, title, y_label, categories, series).map_err(|e| err(&e))?;
    }
    write_png(path, &rgb).map_err(|e| err(&e))
}

/// The same chart as SVG text (for the tests).
#[cfg(test)]
pub fn bar_chart_svg(
    title: &str,
    y_label: &str,
    categories: &[&str],
    series: &[Bars],
) -> Result<String, String> {
    register();
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, SIZE).into_drawing_area();
        draw_bars(root, title, y_label, categories, series).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

fn draw_bars<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    y_label: &str,
    categories: &[&str],
    series: &[Bars],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let root = root.titled(title, (FAMILY, 22))?;
    let (plot, legend) = root.split_horizontally(PLOT_WIDTH);
    let n = categories.len().max(1);
    let y1 = series
        .iter()
        .flat_map(|s| s.values.iter().copied())
        .fold(0.0f64, f64::max);
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.1 };
    let mut chart = ChartBuilder::on(&plot)
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(
            Categories {
                names: categories.iter().map(|c| c.to_string()).collect(),
            },
            0.0..y1,
        )?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .y_desc(y_label)
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 17))
        .y_label_formatter(&|v| human(*v))
        .draw()?;
    // Each group fills 80% of its slot; its bars share that evenly.
    let width = 0.8 / series.len().max(1) as f64;
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        chart.draw_series(s.values.iter().take(n).enumerate().map(|(c, &v)| {
            let x0 = c as f64 + 0.1 + width * i as f64;
            Rectangle::new([(x0, 0.0), (x0 + width, v)], color.filled())
        }))?;
    }
    for (i, s) in series.iter().enumerate() {
        let color = PALETTE[i % PALETTE.len()];
        let y = 40 + 26 * i as i32;
        legend.draw(&Rectangle::new([(8, y - 7), (36, y + 7)], color.filled()))?;
        legend.draw(&Text::new(
            s.label.clone(),
            (44, y - 8),
            (FAMILY, 15).into_font(),
        ))?;
    }
    root.present()
}

/// A categorical x axis: category i spans [i, i + 1), labelled at its
/// middle.
struct Categories {
    names: Vec<String>,
}

impl Ranged for Categories {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = v / self.names.len().max(1) as f64;
        limit.0 + (f * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        (0..self.names.len()).map(|i| i as f64 + 0.5).collect()
    }

    fn range(&self) -> std::ops::Range<f64> {
        0.0..self.names.len().max(1) as f64
    }
}

impl ValueFormatter<f64> for Categories {
    fn format_ext(&self, v: &f64) -> String {
        self.names
            .get(v.floor() as usize)
            .cloned()
            .unwrap_or_default()
    }
}

/// A linear x axis whose ticks are exactly the ones given, labelled by
/// [`tick`] (plotters' own picks round numbers, which may miss the values
/// a sweep ran and print their float noise).
struct XAxis {
    range: std::ops::Range<f64>,
    ticks: Vec<f64>,
    integers: bool,
}

impl Ranged for XAxis {
    type FormatOption = NoDefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = (v - self.range.start) / (self.range.end - self.range.start);
        limit.0 + (f * f64::from(limit.1 - limit.0)).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, _hint: Hint) -> Vec<f64> {
        self.ticks.clone()
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.range.clone()
    }
}

impl ValueFormatter<f64> for XAxis {
    fn format_ext(&self, v: &f64) -> String {
        tick(*v, self.integers)
    }
}

/// At most `max` of `values`, evenly picked, first and last kept: ticks
/// that do not overlap.
fn thin(values: &[f64], max: usize) -> Vec<f64> {
    let mut v: Vec<f64> = values.to_vec();
    v.sort_by(f64::total_cmp);
    v.dedup();
    if v.len() <= max {
        return v;
    }
    let step = (v.len() - 1).div_ceil(max - 1);
    let mut out: Vec<f64> = v.iter().copied().step_by(step).collect();
    if out.last() != v.last() {
        out.push(*v.last().expect("not empty"));
    }
    out
}

/// Multiples of a round step (1, 2 or 5 times a power of ten) covering
/// `lo..=hi` with at most about `max` ticks.
fn round_steps(lo: f64, hi: f64, max: usize) -> Vec<f64> {
    let raw = (hi - lo) / max as f64;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * mag);
    let first = (lo / step).ceil() as i64;
    let last = (hi / step).floor() as i64;
    (first..=last).map(|k| k as f64 * step).collect()
}

/// A tick label without floating-point noise: at most three decimals,
/// trailing zeros dropped ("0.3", not "0.30000000000000004").
fn tick(v: f64, integers: bool) -> String {
    if integers {
        return format!("{v:.0}");
    }
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.into()
    }
}

/// 1234567 -> "1.2M".
pub(crate) fn human(v: f64) -> String {
    let a = v.abs();
    if a >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if a >= 1e3 {
        format!("{:.0}K", v / 1e3)
    } else if a >= 10.0 || a == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_numbers() {
        assert_eq!(human(1_234_567.0), "1.2M");
        assert_eq!(human(45_600.0), "46K");
        assert_eq!(human(0.0), "0");
        assert_eq!(human(0.25), "0.25");
    }

    #[test]
    fn tick_labels_carry_no_float_noise() {
        assert_eq!(tick(0.1 + 0.2, false), "0.3");
        assert_eq!(tick(0.7999999999999999, false), "0.8");
        assert_eq!(tick(0.99, false), "0.99");
        assert_eq!(tick(2.0, true), "2");
        assert_eq!(tick(0.0, false), "0");
        assert_eq!(
            round_steps(0.0, 30.0, 10),
            [0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]
        );
        assert_eq!(thin(&[1.0, 2.0, 4.0], 12), [1.0, 2.0, 4.0]);
        let many: Vec<f64> = (0..40).map(f64::from).collect();
        let t = thin(&many, 12);
        assert!(
            t.len() <= 13 && t[0] == 0.0 && *t.last().unwrap() == 39.0,
            "{t:?}"
        );
    }

    /// The drawn text: the title, the x ticks at the values run and no
    /// others, the legend's labels.
    #[test]
    fn an_svg_shows_the_title_the_swept_values_and_the_legend() {
        let xs = [0.0, 0.5, 0.7, 0.8, 0.9, 0.99];
        let lines = vec![Line {
            label: "SI+SSN".into(),
            points: xs.iter().map(|&x| (x, 1000.0 * (1.0 - x))).collect(),
        }];
        let svg =
            line_chart_svg("Contention", "theta", "txn/s", &lines, XTicks::Values(&xs)).unwrap();
        let texts = svg_texts(&svg);
        assert!(texts.contains(&"Contention".to_string()), "{texts:?}");
        assert!(texts.contains(&"SI+SSN".to_string()), "{texts:?}");
        for want in ["0", "0.5", "0.7", "0.8", "0.9", "0.99"] {
            assert!(texts.contains(&want.to_string()), "{want}: {texts:?}");
        }
        assert!(!texts.iter().any(|t| t.contains("0000")), "{texts:?}");
        assert!(
            !texts.contains(&"0.6".to_string()),
            "only values run: {texts:?}"
        );
        // Integer sweeps: integer ticks only.
        let svg = line_chart_svg(
            "T",
            "threads",
            "y",
            &lines,
            XTicks::Values(&[1.0, 2.0, 4.0]),
        )
        .unwrap();
        let texts = svg_texts(&svg);
        assert!(texts.contains(&"4".to_string()), "{texts:?}");
        assert!(!texts.iter().any(|t| t == "1.5" || t == "1.0"), "{texts:?}");
    }

    /// A bar chart shows every category under its group and every series
    /// in the legend; a bar's height follows its value.
    #[test]
    fn a_bar_chart_labels_its_categories_and_series() {
        let series = vec![
            Bars {
                label: "OCC".into(),
                values: vec![100.0, 0.0],
            },
            Bars {
                label: "SI".into(),
                values: vec![90.0, 50.0],
            },
        ];
        let svg = bar_chart_svg("Commits", "txn/s", &["new-order", "q2*"], &series).unwrap();
        let texts = svg_texts(&svg);
        for want in ["Commits", "new-order", "q2*", "OCC", "SI"] {
            assert!(texts.contains(&want.to_string()), "{want}: {texts:?}");
        }
        // Four bars and two legend swatches: the zero bar is drawn flat.
        let heights: Vec<f64> = svg
            .split("<rect")
            .skip(1)
            .filter_map(|r| {
                let h = r.split("height=\"").nth(1)?;
                h[..h.find('"')?].parse().ok()
            })
            .collect();
        assert!(heights.contains(&0.0), "{heights:?}");
        let dir = std::env::temp_dir().join(format!("strata-bars-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("b.png");
        bar_chart(&path, "t", "y", &["a", "b"], &series).unwrap();
        assert_eq!(&std::fs::read(&path).unwrap()[..4], b"\x89PNG");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    fn svg_texts(svg: &str) -> Vec<String> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let body = &t[t.find('>')? + 1..];
                Some(body[..body.find("</text>")?].trim().to_string())
            })
            .collect()
    }

    #[test]
    fn writes_a_png() {
        let dir = std::env::temp_dir().join(format!("strata-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.png");
        let lines = vec![
            Line {
                label: "a".into(),
                points: vec![(1.0, 10.0), (2.0, 30.0)],
            },
            Line {
                label: "b".into(),
                points: vec![(1.0, 5.0)],
            },
        ];
        line_chart(&path, "title", "x", "y", &lines).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        assert!(bytes.len() > 2000);
        // It decodes to the plot's size, and the series were drawn: the
        // first palette colour is among its pixels.
        let mut reader = png::Decoder::new(std::io::Cursor::new(&bytes))
            .read_info()
            .unwrap();
        let mut rgb = vec![0; reader.output_buffer_size()];
        let info = reader.next_frame(&mut rgb).unwrap();
        assert_eq!((info.width, info.height), SIZE);
        assert_eq!(info.color_type, png::ColorType::Rgb);
        let c = PALETTE[0];
        assert!(
            rgb.chunks(3).any(|p| p == [c.0, c.1, c.2]),
            "no pixel of the first series' colour"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
