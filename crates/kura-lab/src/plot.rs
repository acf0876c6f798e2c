//! PNG charts for kura's commands: a line chart with several series and a grouped
//! bar chart, drawn with plotters' bitmap backend. Text uses the DejaVu Sans font
//! embedded from `assets/fonts` (license beside it), so charts render the same on
//! every machine, with or without system fonts.

use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::{register_font, FontStyle};

const FONT_BYTES: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");
const FONT: &str = "sans-serif";
const SIZE: (u32, u32) = (1000, 640);

/// Distinct colours for up to 12 series (then they repeat).
const COLOURS: [RGBColor; 12] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
    RGBColor(0, 0, 0),
    RGBColor(255, 187, 120),
];

fn colour(i: usize) -> RGBColor {
    COLOURS[i % COLOURS.len()]
}

/// One named line: (x, y) points in x order.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
}

/// A chart's title and axis descriptions.
#[derive(Clone, Debug)]
pub struct Labels<'a> {
    pub title: &'a str,
    pub x: &'a str,
    pub y: &'a str,
}

/// One group of bars (one bar per series) under a category label.
#[derive(Clone, Debug)]
pub struct BarGroup {
    pub label: String,
    pub values: Vec<f64>,
}

fn ensure_font() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            register_font(FONT, FontStyle::Normal, FONT_BYTES)
                .map_err(|_| "the embedded chart font could not be loaded".to_string())
        })
        .clone()
}

fn draw_err(e: impl std::fmt::Display) -> String {
    format!("drawing chart: {e}")
}

fn canvas(path: &Path) -> Result<DrawingArea<BitMapBackend<'_>, Shift>, String> {
    ensure_font()?;
    let root = BitMapBackend::new(path, SIZE).into_drawing_area();
    root.fill(&WHITE).map_err(draw_err)?;
    Ok(root)
}

/// Span of `values` padded by 5 %, or `fallback` if empty or flat.
fn padded_range(values: impl Iterator<Item = f64>, fallback: Range<f64>) -> Range<f64> {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if lo > hi {
        return fallback;
    }
    if lo == hi {
        return (lo - 0.5)..(hi + 0.5);
    }
    let pad = (hi - lo) * 0.05;
    (lo - pad)..(hi + pad)
}

/// Writes a line chart with markers, one line per series, legend in the corner.
/// `y_range` fixes the y axis (e.g. `0.0..1.0` for ratios); `None` fits the data.
pub fn line_chart(
    path: &Path,
    labels: &Labels,
    series: &[Series],
    y_range: Option<Range<f64>>,
) -> Result<(), String> {
    let root = canvas(path)?;
    let all = || series.iter().flat_map(|s| s.points.iter());
    let x_range = padded_range(all().map(|p| p.0), 0.0..1.0);
    let y_range = y_range.unwrap_or_else(|| padded_range(all().map(|p| p.1), 0.0..1.0));
    let mut chart = ChartBuilder::on(&root)
        .caption(labels.title, (FONT, 26))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x_range, y_range)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .x_desc(labels.x)
        .y_desc(labels.y)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 18))
        .draw()
        .map_err(draw_err)?;
    for (i, s) in series.iter().enumerate() {
        let c = colour(i);
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))
            .map_err(draw_err)?
            .label(s.name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], c.stroke_width(3)));
        chart
            .draw_series(s.points.iter().map(|&p| Circle::new(p, 4, c.filled())))
            .map_err(draw_err)?;
    }
    chart
        .configure_series_labels()
        // Hit-ratio curves rise to the right: the upper left is where space is.
        .position(SeriesLabelPosition::UpperLeft)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(draw_err)?;
    root.present().map_err(draw_err)
}

/// Writes a grouped bar chart: one group per category, one bar (colour) per series
/// within it. With a single series it is a plain bar chart (a histogram). When there
/// are many groups only every k-th label is printed so they stay legible.
pub fn grouped_bar_chart(
    path: &Path,
    labels: &Labels,
    series_names: &[String],
    groups: &[BarGroup],
) -> Result<(), String> {
    if groups.iter().any(|g| g.values.len() != series_names.len()) {
        return Err("every bar group needs one value per series".into());
    }
    let root = canvas(path)?;
    let y_max = groups
        .iter()
        .flat_map(|g| g.values.iter().copied())
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let y_max = if y_max > 0.0 { y_max * 1.08 } else { 1.0 };
    let n = groups.len().max(1);
    // Group i is centred on x = i, so the axis's own (integer) key points fall on
    // group centres; asking for ≤ 16 of them thins the labels of long charts.
    let mut chart = ChartBuilder::on(&root)
        .caption(labels.title, (FONT, 26))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..y_max)
        .map_err(draw_err)?;
    let label_of = |x: &f64| {
        let i = x.round();
        if (x - i).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        groups
            .get(i as usize)
            .map(|g| g.label.clone())
            .unwrap_or_default()
    };
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n.min(16))
        .x_label_formatter(&label_of)
        .y_label_formatter(&|v: &f64| {
            // Counts read better without decimals; small values keep two.
            if v.abs() >= 100.0 {
                format!("{v:.0}")
            } else {
                format!("{v:.2}")
            }
        })
        .x_desc(labels.x)
        .y_desc(labels.y)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 18))
        .draw()
        .map_err(draw_err)?;
    let width = 0.8 / series_names.len().max(1) as f64;
    for (s, name) in series_names.iter().enumerate() {
        let c = colour(s);
        chart
            .draw_series(groups.iter().enumerate().map(|(g, group)| {
                // Bars of one group share the middle 80 % of its span.
                let x0 = g as f64 - 0.4 + width * s as f64;
                Rectangle::new([(x0, 0.0), (x0 + width, group.values[s])], c.filled())
            }))
            .map_err(draw_err)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], c.filled()));
    }
    if series_names.len() > 1 {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .label_font((FONT, 15))
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()
            .map_err(draw_err)?;
    }
    root.present().map_err(draw_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

    fn temp_png(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("kura-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    fn assert_png(path: &Path) {
        let bytes = std::fs::read(path).unwrap();
        assert!(
            bytes.len() > 1000,
            "{} is only {} bytes",
            path.display(),
            bytes.len()
        );
        assert_eq!(bytes[..8], PNG_SIGNATURE);
        // IHDR width and height are the chart size.
        let w = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
        let h = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
        assert_eq!((w, h), SIZE);
        std::fs::remove_file(path).unwrap();
    }

    #[test]
    fn line_chart_writes_a_png() {
        let path = temp_png("lines.png");
        let series = vec![
            Series {
                name: "lru".into(),
                points: vec![(2.0, 0.1), (3.0, 0.15), (4.0, 0.2)],
            },
            Series {
                name: "demote".into(),
                points: vec![(2.0, 0.3), (3.0, 0.45), (4.0, 0.6)],
            },
        ];
        let labels = Labels {
            title: "lower hit ratio",
            x: "lower cache (GB)",
            y: "hit ratio",
        };
        line_chart(&path, &labels, &series, Some(0.0..1.0)).unwrap();
        assert_png(&path);
        // an empty chart still draws (axes only)
        let path = temp_png("empty.png");
        line_chart(&path, &labels, &[], None).unwrap();
        assert_png(&path);
    }

    #[test]
    fn grouped_bar_chart_writes_a_png_and_checks_shapes() {
        let path = temp_png("bars.png");
        let names = vec!["lru".to_string(), "arc".to_string()];
        let groups: Vec<BarGroup> = (0..40)
            .map(|i| BarGroup {
                label: format!("{i} MB"),
                values: vec![i as f64, 40.0 - i as f64],
            })
            .collect();
        let labels = Labels {
            title: "bars",
            x: "distance",
            y: "count",
        };
        grouped_bar_chart(&path, &labels, &names, &groups).unwrap();
        assert_png(&path);
        let bad = vec![BarGroup {
            label: "x".into(),
            values: vec![1.0],
        }];
        assert!(grouped_bar_chart(&temp_png("bad.png"), &labels, &names, &bad).is_err());
    }
}
