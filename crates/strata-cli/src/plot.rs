//! Line plots of a figure's sweep, drawn with `plotters` into a PNG.
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

use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
const FAMILY: &str = "sans-serif";

fn register() {
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

/// Draws `lines` into a PNG at `path`.
pub fn line_chart(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    lines: &[Line],
) -> Result<(), String> {
    register();
    let err = |e: &dyn std::fmt::Display| format!("plotting {}: {e}", path.display());
    let root = BitMapBackend::new(path, (900, 560)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(&e))?;
    let all = lines.iter().flat_map(|l| l.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::MAX, f64::MIN, 0.0f64);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 - x0 < 1e-9 {
        x1 = x0 + 1.0;
    }
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.1 };
    let mut chart = ChartBuilder::on(&root)
        .caption(title, (FAMILY, 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(x0..x1, 0.0..y1)
        .map_err(|e| err(&e))?;
    chart
        .configure_mesh()
        .x_desc(x_label)
        .y_desc(y_label)
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 17))
        .y_label_formatter(&|v| human(*v))
        // Whole-number sweeps (threads, attributes) read better without ".0".
        .x_label_formatter(&|v| {
            if v.fract() == 0.0 {
                format!("{v:.0}")
            } else {
                format!("{v}")
            }
        })
        .draw()
        .map_err(|e| err(&e))?;
    for (i, line) in lines.iter().enumerate() {
        let color = Palette99::pick(i).to_rgba();
        let style = ShapeStyle::from(color).stroke_width(2);
        chart
            .draw_series(LineSeries::new(line.points.iter().copied(), style))
            .map_err(|e| err(&e))?
            .label(line.label.clone())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 20, y)], style));
        chart
            .draw_series(
                line.points
                    .iter()
                    .map(|&p| Circle::new(p, 4, ShapeStyle::from(color).filled())),
            )
            .map_err(|e| err(&e))?;
    }
    chart
        .configure_series_labels()
        .label_font((FAMILY, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperRight)
        .draw()
        .map_err(|e| err(&e))?;
    root.present().map_err(|e| err(&e))?;
    Ok(())
}

/// 1234567 -> "1.2M".
fn human(v: f64) -> String {
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
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
