//! `explore`'s two pictures: the Pareto plot of one search (throughput
//! against memory) and the heatmap of a grid (the winning design per cell).
//!
//! ```text
//!   txn/s ▲   ○ ○ ●─●  front      winner per cell:   theta 0.9 │ A +8%  │ A ~ B │
//!         │ ○   ●      finalists                     theta 0   │ B +3%  │ C +12% │
//!         └────────▶ bytes/row                                   rr 0.5   rr 1.0
//! ```
//!
//! Drawn with the same bundled font and palette as `reproduce`'s plots
//! (`crate::plot`); each function draws on any plotters backend, so the
//! tests read the SVG's text.

use std::path::Path;

use plotters::prelude::*;

use crate::plot::{human, register, write_png, FAMILY, PALETTE, SIZE};

/// One design's point on the Pareto plot.
pub struct Dot {
    pub label: String,
    pub bytes_per_row: f64,
    pub committed_per_s: f64,
    pub finalist: bool,
}

/// The designs no other design beats on both axes (more txn/s and fewer
/// bytes per row), sorted by bytes per row.
pub fn front(dots: &[Dot]) -> Vec<usize> {
    let mut f: Vec<usize> = (0..dots.len())
        .filter(|&i| {
            !dots.iter().enumerate().any(|(j, d)| {
                j != i
                    && d.committed_per_s >= dots[i].committed_per_s
                    && d.bytes_per_row <= dots[i].bytes_per_row
                    && (d.committed_per_s > dots[i].committed_per_s
                        || d.bytes_per_row < dots[i].bytes_per_row)
            })
        })
        .collect();
    f.sort_by(|&a, &b| dots[a].bytes_per_row.total_cmp(&dots[b].bytes_per_row));
    f.dedup_by(|a, b| {
        dots[*a].bytes_per_row == dots[*b].bytes_per_row
            && dots[*a].committed_per_s == dots[*b].committed_per_s
    });
    f
}

fn draw_pareto<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    title: &str,
    dots: &[Dot],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let root = root.titled(title, (FAMILY, 20))?;
    let x1 = dots.iter().map(|d| d.bytes_per_row).fold(1.0, f64::max) * 1.1;
    let y1 = dots.iter().map(|d| d.committed_per_s).fold(1.0, f64::max) * 1.1;
    let mut chart = ChartBuilder::on(&root)
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..x1, 0.0..y1)?;
    chart
        .configure_mesh()
        .x_desc("bytes per row after the run (lower is better)")
        .y_desc("committed transactions/s (higher is better)")
        .y_label_formatter(&|v| human(*v))
        .x_label_formatter(&|v| human(*v))
        .label_style((FAMILY, 15))
        .axis_desc_style((FAMILY, 17))
        .draw()?;
    let grey = RGBColor(160, 160, 160);
    chart.draw_series(
        dots.iter()
            .filter(|d| !d.finalist)
            .map(|d| Circle::new((d.bytes_per_row, d.committed_per_s), 3, grey.filled())),
    )?;
    chart.draw_series(
        dots.iter()
            .filter(|d| d.finalist)
            .map(|d| Circle::new((d.bytes_per_row, d.committed_per_s), 5, PALETTE[1].filled())),
    )?;
    let f = front(dots);
    let line = ShapeStyle::from(PALETTE[0]).stroke_width(2);
    chart.draw_series(LineSeries::new(
        f.iter()
            .map(|&i| (dots[i].bytes_per_row, dots[i].committed_per_s)),
        line,
    ))?;
    for &i in &f {
        let d = &dots[i];
        chart.draw_series(std::iter::once(
            EmptyElement::at((d.bytes_per_row, d.committed_per_s))
                + Circle::new((0, 0), 5, line)
                + Text::new(d.label.clone(), (6, -16), (FAMILY, 13).into_font()),
        ))?;
    }
    root.draw(&Text::new(
        "blue: the Pareto front (labelled); orange: finalists; grey: cut earlier",
        (110, 4),
        (FAMILY, 13).into_font(),
    ))?;
    root.present()
}

/// One cell of the heatmap.
pub struct Cell {
    /// Grid indexes (x, y).
    pub at: (usize, usize),
    pub winner: String,
    /// `+8% over X`, or `~ 2 others` when others are within the noise.
    pub note: String,
}

/// The heatmap's axes.
pub struct Axes {
    pub title: String,
    pub x_name: String,
    pub xs: Vec<String>,
    pub y_name: String,
    pub ys: Vec<String>,
}

fn draw_heatmap<DB: DrawingBackend>(
    root: DrawingArea<DB, plotters::coord::Shift>,
    a: &Axes,
    cells: &[Cell],
) -> Result<(), DrawingAreaErrorKind<DB::ErrorType>> {
    root.fill(&WHITE)?;
    let root = root.titled(&a.title, (FAMILY, 20))?;
    let (plot, legend) = root.split_horizontally(760);
    let mut winners: Vec<&str> = cells.iter().map(|c| c.winner.as_str()).collect();
    winners.sort();
    winners.dedup();
    let colour = |w: &str| {
        let i = winners.iter().position(|x| *x == w).unwrap_or(0);
        let c = PALETTE[i % PALETTE.len()];
        // Lighter, so that the text on it reads.
        RGBColor(c.0 / 2 + 127, c.1 / 2 + 127, c.2 / 2 + 127)
    };
    let (nx, ny) = (a.xs.len().max(1), a.ys.len().max(1));
    let (left, top, bottom) = (110i32, 10i32, 60i32);
    let (w, h) = plot.dim_in_pixel();
    let cw = (w as i32 - left - 10) / nx as i32;
    let ch = (h as i32 - top - bottom) / ny as i32;
    for c in cells {
        let x0 = left + cw * c.at.0 as i32;
        // The first y value at the bottom.
        let y0 = top + ch * (ny - 1 - c.at.1) as i32;
        plot.draw(&Rectangle::new(
            [(x0, y0), (x0 + cw - 2, y0 + ch - 2)],
            colour(&c.winner).filled(),
        ))?;
        plot.draw(&Text::new(
            c.winner.clone(),
            (x0 + 6, y0 + ch / 2 - 18),
            (FAMILY, 14).into_font(),
        ))?;
        plot.draw(&Text::new(
            c.note.clone(),
            (x0 + 6, y0 + ch / 2 + 2),
            (FAMILY, 13).into_font(),
        ))?;
    }
    for (i, x) in a.xs.iter().enumerate() {
        plot.draw(&Text::new(
            format!("{} = {x}", a.x_name),
            (left + cw * i as i32 + 6, h as i32 - bottom + 12),
            (FAMILY, 14).into_font(),
        ))?;
    }
    for (j, y) in a.ys.iter().enumerate() {
        let label = if a.y_name.is_empty() {
            String::new()
        } else {
            format!("{} = {y}", a.y_name)
        };
        plot.draw(&Text::new(
            label,
            (4, top + ch * (ny - 1 - j) as i32 + ch / 2 - 8),
            (FAMILY, 14).into_font(),
        ))?;
    }
    for (i, w) in winners.iter().enumerate() {
        let y = 30 + 26 * i as i32;
        legend.draw(&Rectangle::new(
            [(8, y - 8), (28, y + 8)],
            colour(w).filled(),
        ))?;
        legend.draw(&Text::new(
            w.to_string(),
            (36, y - 8),
            (FAMILY, 14).into_font(),
        ))?;
    }
    root.present()
}

fn png(
    path: &Path,
    draw: impl FnOnce(DrawingArea<BitMapBackend<'_>, plotters::coord::Shift>) -> Result<(), String>,
) -> Result<(), String> {
    register();
    let mut rgb = vec![0u8; SIZE.0 as usize * SIZE.1 as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut rgb, SIZE).into_drawing_area();
        draw(root).map_err(|e| format!("plotting {}: {e}", path.display()))?;
    }
    write_png(path, &rgb).map_err(|e| format!("writing {}: {e}", path.display()))
}

pub fn pareto_png(path: &Path, title: &str, dots: &[Dot]) -> Result<(), String> {
    png(path, |root| {
        draw_pareto(root, title, dots).map_err(|e| e.to_string())
    })
}

pub fn heatmap_png(path: &Path, a: &Axes, cells: &[Cell]) -> Result<(), String> {
    png(path, |root| {
        draw_heatmap(root, a, cells).map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(label: &str, b: f64, t: f64) -> Dot {
        Dot {
            label: label.into(),
            bytes_per_row: b,
            committed_per_s: t,
            finalist: false,
        }
    }

    #[test]
    fn the_front_is_the_undominated_points() {
        let dots = [
            dot("a", 100.0, 50.0),
            dot("b", 200.0, 90.0),
            dot("c", 150.0, 40.0), // beaten by a
            dot("d", 300.0, 90.0), // beaten by b (same txn/s, more bytes)
            dot("e", 80.0, 10.0),
        ];
        let f: Vec<&str> = front(&dots)
            .iter()
            .map(|&i| dots[i].label.as_str())
            .collect();
        assert_eq!(f, ["e", "a", "b"]);
    }

    #[test]
    fn plots_name_what_they_show() {
        register();
        let dots = [
            dot("ssn/n2o/txn/tuple-id", 120.0, 5e5),
            dot("mvto/o2n/vac/tuple-id", 300.0, 6e5),
        ];
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
            draw_pareto(root, "YCSB: throughput against memory", &dots).unwrap();
        }
        assert!(svg.contains("YCSB: throughput against memory"));
        assert!(svg.contains("ssn/n2o/txn/tuple-id"));
        assert!(svg.contains("mvto/o2n/vac/tuple-id"));
        let axes = Axes {
            title: "winner per cell".into(),
            x_name: "theta".into(),
            xs: vec!["0".into(), "0.9".into()],
            y_name: String::new(),
            ys: vec![String::new()],
        };
        let cells = [
            Cell {
                at: (0, 0),
                winner: "A".into(),
                note: "+8% over B".into(),
            },
            Cell {
                at: (1, 0),
                winner: "C".into(),
                note: "~ B".into(),
            },
        ];
        let mut svg = String::new();
        {
            let root = SVGBackend::with_string(&mut svg, SIZE).into_drawing_area();
            draw_heatmap(root, &axes, &cells).unwrap();
        }
        for text in ["winner per cell", "theta = 0.9", "+8% over B", "~ B"] {
            assert!(svg.contains(text), "{text}");
        }
    }
}
