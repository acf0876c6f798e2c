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

use crate::error::{LabError, LabResult};

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

/// How a series is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// A measured line: its own colour, dash pattern and marker shape, so series stay
    /// apart in grey print and where they overlap.
    Line,
    /// Raw samples behind a smoothed line: thin and pale, in the colour of the
    /// `n`-th `Line` series, no legend entry.
    Faint(usize),
    /// An analytic bound or reference curve: thin, dark grey, dashed, no markers.
    Reference,
}

/// One named line: (x, y) points in x order.
#[derive(Clone, Debug)]
pub struct Series {
    pub name: String,
    pub points: Vec<(f64, f64)>,
    pub style: Style,
}

impl Series {
    pub fn line(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
            style: Style::Line,
        }
    }

    pub fn faint(of_line: usize, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: String::new(),
            points,
            style: Style::Faint(of_line),
        }
    }

    pub fn reference(name: impl Into<String>, points: Vec<(f64, f64)>) -> Self {
        Series {
            name: name.into(),
            points,
            style: Style::Reference,
        }
    }
}

/// A horizontal line across the chart (a ceiling), with an optional shaded band
/// (its spread).
#[derive(Clone, Debug)]
pub struct HLine {
    pub label: String,
    pub y: f64,
    pub band: Option<(f64, f64)>,
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

fn ensure_font() -> LabResult<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let registered =
        *REGISTERED.get_or_init(|| register_font(FONT, FontStyle::Normal, FONT_BYTES).is_ok());
    if registered {
        Ok(())
    } else {
        Err(LabError::Font)
    }
}

/// Plotters' error as text: its type depends on the backend.
fn draw_err(e: impl std::fmt::Display) -> LabError {
    LabError::Plot(e.to_string())
}

fn canvas(path: &Path) -> LabResult<DrawingArea<BitMapBackend<'_>, Shift>> {
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

/// Colour of analytic reference curves: near black, over any coloured line.
const REFERENCE: RGBColor = RGBColor(40, 40, 40);

/// Dash patterns of horizontal lines: the first (the ceiling) long dashes, then dots.
const HLINE_DASHES: [(u32, u32); 3] = [(14, 6), (2, 4), (8, 3)];

/// Most markers drawn on one line: long timelines get one every few samples.
const MAX_MARKERS: usize = 16;

/// Dash patterns of reference curves, one per curve of a chart.
const REFERENCE_DASHES: [(u32, u32); 3] = [(10, 5), (3, 4), (6, 3)];

/// Dash patterns (dash, gap in pixels; `None` solid) cycled over `Line` series.
const DASHES: [Option<(u32, u32)>; 3] = [None, Some((12, 6)), Some((3, 5))];

/// Marker shapes cycled over `Line` series (an index into [`marker`]).
const MARKERS: usize = 5;

/// Draws marker `kind` at pixel (x, y): circle, square, triangle, diamond, cross.
/// Even series are hollow and larger, odd ones filled and smaller, so a series lying
/// exactly on another still shows.
fn marker<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (x, y): (i32, i32),
    series: usize,
    c: RGBColor,
) -> LabResult<()> {
    let (r, hollow) = marker_radius(series);
    let style = if hollow {
        c.stroke_width(2)
    } else {
        c.filled()
    };
    let res = match (series / 2 + series) % MARKERS {
        0 => area.draw(&Circle::new((x, y), r, style)),
        1 => area.draw(&Rectangle::new([(x - r, y - r), (x + r, y + r)], style)),
        2 => area
            .draw(&Polygon::new(
                vec![(x, y - r - 1), (x - r - 1, y + r), (x + r + 1, y + r)],
                style,
            ))
            .and_then(|_| {
                if hollow {
                    area.draw(&PathElement::new(
                        vec![
                            (x, y - r - 1),
                            (x - r - 1, y + r),
                            (x + r + 1, y + r),
                            (x, y - r - 1),
                        ],
                        style,
                    ))
                } else {
                    Ok(())
                }
            }),
        3 => {
            let pts = vec![
                (x, y - r - 1),
                (x + r + 1, y),
                (x, y + r + 1),
                (x - r - 1, y),
            ];
            if hollow {
                let mut closed = pts.clone();
                closed.push(pts[0]);
                area.draw(&PathElement::new(closed, style))
            } else {
                area.draw(&Polygon::new(pts, style))
            }
        }
        _ => area
            .draw(&PathElement::new(
                vec![(x - r, y - r), (x + r, y + r)],
                c.stroke_width(2),
            ))
            .and_then(|_| {
                area.draw(&PathElement::new(
                    vec![(x - r, y + r), (x + r, y - r)],
                    c.stroke_width(2),
                ))
            }),
    };
    res.map_err(draw_err)
}

/// Radius and hollowness of series `series`'s marker. Even series are hollow rings,
/// odd ones filled and smaller than every ring drawn before them: drawn on top where
/// two series coincide, a filled marker sits inside the earlier ring, and a later
/// ring goes round the earlier filled one, so both stay visible.
fn marker_radius(series: usize) -> (i32, bool) {
    let s = series as i32;
    if series.is_multiple_of(2) {
        ((10 - s / 2).max(6), true)
    } else {
        ((6 - s / 4).max(3), false)
    }
}

/// A tick label without trailing zeros: `20`, `2.5`, `0.125`.
fn tick(v: &f64) -> String {
    if v.abs() >= 1e5 {
        return format!("{v:.0}");
    }
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// A y tick label: in thousands (`k`) on an axis reaching 10,000 (IOPS).
fn y_tick(v: &f64, in_thousands: bool) -> String {
    if in_thousands && *v != 0.0 {
        tick(&(v / 1000.0)) + "k"
    } else {
        tick(v)
    }
}

/// Writes a line chart with markers, one line per series, legend in the corner.
/// `y_range` fixes the y axis (e.g. `0.0..1.0` for ratios); `None` fits the data.
pub fn line_chart(
    path: &Path,
    labels: &Labels,
    series: &[Series],
    y_range: Option<Range<f64>>,
) -> LabResult<()> {
    line_chart_with(path, labels, series, &[], y_range)
}

/// [`line_chart_with`] over a base-2 logarithmic x axis (x values must be
/// positive; ticks name the powers of two), as paper 001's time-against-memory
/// figures.
pub fn line_chart_log2_x(
    path: &Path,
    labels: &Labels,
    series: &[Series],
    y_range: Option<Range<f64>>,
) -> LabResult<()> {
    let logged: Vec<Series> = series
        .iter()
        .map(|s| Series {
            name: s.name.clone(),
            points: s
                .points
                .iter()
                .filter(|p| p.0 > 0.0)
                .map(|&(x, y)| (x.log2(), y))
                .collect(),
            style: s.style,
        })
        .collect();
    draw_lines(path, labels, &logged, &[], y_range, true)
}

/// An x tick on a log2 axis: the power of two, for whole exponents only.
fn pow2_tick(v: &f64) -> String {
    if (v - v.round()).abs() < 1e-6 {
        tick(&2f64.powf(v.round()))
    } else {
        String::new()
    }
}

/// [`line_chart`] with horizontal lines (ceilings) and their shaded spreads.
pub fn line_chart_with(
    path: &Path,
    labels: &Labels,
    series: &[Series],
    hlines: &[HLine],
    y_range: Option<Range<f64>>,
) -> LabResult<()> {
    draw_lines(path, labels, series, hlines, y_range, false)
}

fn draw_lines(
    path: &Path,
    labels: &Labels,
    series: &[Series],
    hlines: &[HLine],
    y_range: Option<Range<f64>>,
    log2_x: bool,
) -> LabResult<()> {
    let root = canvas(path)?;
    let all = || series.iter().flat_map(|s| s.points.iter());
    let x_range = padded_range(all().map(|p| p.0), 0.0..1.0);
    let y_range = y_range.unwrap_or_else(|| {
        let lines = hlines
            .iter()
            .flat_map(|h| [h.y, h.band.map_or(h.y, |b| b.1)]);
        padded_range(all().map(|p| p.1).chain(lines), 0.0..1.0)
    });
    let (x0, x1) = (x_range.start, x_range.end);
    let in_thousands = y_range.end >= 10_000.0;
    let y_label = move |v: &f64| y_tick(v, in_thousands);
    // The legend's entries are known up front, so the plot leaves room for it.
    let entries = hlines.len()
        + series
            .iter()
            .filter(|s| !matches!(s.style, Style::Faint(_)))
            .count();
    let names: Vec<&str> = series
        .iter()
        .filter(|s| !matches!(s.style, Style::Faint(_)))
        .map(|s| s.name.as_str())
        .chain(hlines.iter().map(|h| h.label.as_str()))
        .collect();
    let legend_room = if entries > 0 {
        legend_width(&root, &names)? + 20
    } else {
        0
    };
    // The title centred over the whole image, not just the plot left of the legend.
    let below_title = root.titled(labels.title, (FONT, 24)).map_err(draw_err)?;
    let mut chart = ChartBuilder::on(&below_title)
        .margin(16)
        .margin_right(16 + legend_room as u32)
        .x_label_area_size(48)
        .y_label_area_size(72)
        .build_cartesian_2d(x_range, y_range)
        .map_err(draw_err)?;
    chart
        .configure_mesh()
        .x_desc(labels.x)
        .y_desc(labels.y)
        .x_labels(if log2_x {
            // One candidate tick per power of two, so every whole exponent is labelled.
            ((x1 - x0).ceil() as usize + 1).max(2)
        } else {
            10
        })
        .y_labels(10)
        .x_label_formatter(if log2_x { &pow2_tick } else { &tick })
        .y_label_formatter(&y_label)
        .light_line_style(WHITE.mix(0.0))
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 18))
        .draw()
        .map_err(draw_err)?;
    for (k, h) in hlines.iter().enumerate() {
        if let Some((lo, hi)) = h.band {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(x0, lo), (x1, hi)],
                    BLACK.mix(0.08).filled(),
                )))
                .map_err(draw_err)?;
        }
        let style = BLACK.mix(0.75).stroke_width(2);
        let (dash, gap) = HLINE_DASHES[k % HLINE_DASHES.len()];
        chart
            .draw_series(DashedLineSeries::new(
                vec![(x0, h.y), (x1, h.y)],
                dash,
                gap,
                style,
            ))
            .map_err(draw_err)?;
    }
    // Faint raw samples first, so the lines stay on top.
    for s in series {
        if let Style::Faint(of) = s.style {
            let c = colour(of).mix(0.22);
            chart
                .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(1)))
                .map_err(draw_err)?;
        }
    }
    let mut legend = Vec::new();
    for (k, h) in hlines.iter().enumerate() {
        legend.push(Entry::HLine(
            h.label.clone(),
            HLINE_DASHES[k % HLINE_DASHES.len()],
        ));
    }
    let (mut line, mut references) = (0, 0);
    for s in series {
        match s.style {
            Style::Faint(_) => {}
            Style::Reference => {
                let style = REFERENCE.stroke_width(2);
                let (dash, gap) = REFERENCE_DASHES[references % REFERENCE_DASHES.len()];
                references += 1;
                chart
                    .draw_series(DashedLineSeries::new(
                        s.points.iter().copied(),
                        dash,
                        gap,
                        style,
                    ))
                    .map_err(draw_err)?;
                legend.push(Entry::Reference(s.name.clone(), (dash, gap)));
            }
            Style::Line => {
                let (i, c) = (line, colour(line));
                line += 1;
                let style = c.stroke_width(2);
                let points = s.points.iter().copied();
                match DASHES[i % DASHES.len()] {
                    None => chart.draw_series(LineSeries::new(points, style)),
                    Some((dash, gap)) => {
                        chart.draw_series(DashedLineSeries::new(points, dash, gap, style))
                    }
                }
                .map_err(draw_err)?;
                legend.push(Entry::Line(s.name.clone(), i));
                // Markers drawn in pixel space, so hollow and filled shapes of
                // overlapping series both remain visible.
                let area = chart.plotting_area();
                let stride = s.points.len().div_ceil(MAX_MARKERS).max(1);
                for p in s.points.iter().step_by(stride) {
                    marker(&root, area.map_coordinate(p), i, c)?;
                }
            }
        }
    }
    draw_legend(&root, &legend)?;
    root.present().map_err(draw_err)
}

/// A legend entry: a measured line (its index among lines), a reference curve, or
/// a horizontal line.
enum Entry {
    Line(String, usize),
    Reference(String, (u32, u32)),
    HLine(String, (u32, u32)),
}

/// The legend's text style.
fn legend_font() -> TextStyle<'static> {
    (FONT, 15).into_font().color(&BLACK)
}

/// Pixel width of the legend box: the line sample and the longest name as the font
/// draws it (a guess per character left a wide empty box squeezing the plot).
fn legend_width<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    names: &[&str],
) -> LabResult<i32> {
    let mut widest = 0;
    for n in names {
        let (w, _) = root
            .estimate_text_size(n, &legend_font())
            .map_err(draw_err)?;
        widest = widest.max(w as i32);
    }
    Ok(56 + widest)
}

/// Draws the legend box right of the plot: each entry's line sample (with its
/// dash pattern and marker) and name.
fn draw_legend<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    entries: &[Entry],
) -> LabResult<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let names: Vec<&str> = entries
        .iter()
        .map(|e| match e {
            Entry::Line(n, _) | Entry::Reference(n, _) | Entry::HLine(n, _) => n.as_str(),
        })
        .collect();
    let width = legend_width(root, &names)?;
    // In the margin right of the plot, so it never hides data.
    let (left, top, row) = (SIZE.0 as i32 - 12 - width, 16 + 40, 22);
    let height = row * entries.len() as i32 + 10;
    root.draw(&Rectangle::new(
        [(left, top), (left + width, top + height)],
        WHITE.mix(0.9).filled(),
    ))
    .map_err(draw_err)?;
    root.draw(&Rectangle::new(
        [(left, top), (left + width, top + height)],
        BLACK.stroke_width(1),
    ))
    .map_err(draw_err)?;
    for (k, e) in entries.iter().enumerate() {
        let y = top + 5 + row / 2 + row * k as i32;
        let (x0, x1) = (left + 8, left + 40);
        let (name, style, dash) = match e {
            Entry::Line(n, i) => (n, colour(*i).stroke_width(2), DASHES[i % DASHES.len()]),
            Entry::Reference(n, dash) => (n, REFERENCE.stroke_width(2), Some(*dash)),
            Entry::HLine(n, dash) => (n, BLACK.mix(0.75).stroke_width(2), Some(*dash)),
        };
        match dash {
            None => root
                .draw(&PathElement::new(vec![(x0, y), (x1, y)], style))
                .map_err(draw_err)?,
            Some((d, g)) => {
                let (d, g) = (d.min(10) as i32, g.min(6) as i32);
                let mut at = x0;
                while at < x1 {
                    root.draw(&PathElement::new(
                        vec![(at, y), ((at + d).min(x1), y)],
                        style,
                    ))
                    .map_err(draw_err)?;
                    at += d + g;
                }
            }
        }
        if let Entry::Line(_, i) = e {
            marker(root, ((x0 + x1) / 2, y), *i, colour(*i))?;
        }
        root.draw(&Text::new(name.clone(), (x1 + 8, y - 8), legend_font()))
            .map_err(draw_err)?;
    }
    Ok(())
}

/// Writes a grouped bar chart: one group per category, one bar (colour) per series
/// within it. With a single series it is a plain bar chart (a histogram). When there
/// are many groups only every k-th label is printed so they stay legible.
pub fn grouped_bar_chart(
    path: &Path,
    labels: &Labels,
    series_names: &[String],
    groups: &[BarGroup],
) -> LabResult<()> {
    if groups.iter().any(|g| g.values.len() != series_names.len()) {
        return Err(LabError::Invalid(
            "every bar group needs one value per series".into(),
        ));
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
        .y_labels(10)
        .y_label_formatter(&|v: &f64| y_tick(v, y_max >= 10_000.0))
        // Only the labelled lines: plotters' default fine mesh ruled the chart like
        // writing paper.
        .light_line_style(WHITE.mix(0.0))
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

/// The y range of a log axis over `values` (positive, finite): from the power of ten
/// at or below the smallest (bars rise from there) to 4× the largest (room for the
/// legend) or the power of ten above it, whichever is higher, so every bar lies
/// between two labelled decades; `None` when no value can be drawn on a log axis.
fn decades(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    let (lo, hi) = values
        .filter(|v| v.is_finite() && *v > 0.0)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    // Just outside the powers of ten, so the axis labels them despite rounding in powf.
    (lo <= hi).then(|| {
        let decade_above = 10f64.powf(hi.log10().floor() + 1.0) * 1.001;
        (
            10f64.powf(lo.log10().floor()) * 0.999,
            (hi * 4.0).max(decade_above),
        )
    })
}

/// A tick of a log axis: the value in plain notation to three significant digits,
/// without trailing zeros (0.001, 0.02, 5, 300).
fn log_tick(v: &f64) -> String {
    if !(v.is_finite() && *v > 0.0) {
        return String::new();
    }
    let digits = (2 - v.log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Writes a grouped bar chart over a logarithmic y axis (times that span decades, as
/// paper 003's figures 4 and 5): one group per category, one bar per series. A value
/// that is missing, zero or not finite (the system did not run the query) leaves a gap
/// with an "n/a" mark, so an absent bar is not mistaken for a short one.
pub fn grouped_bar_chart_log_y(
    path: &Path,
    labels: &Labels,
    series_names: &[String],
    groups: &[BarGroup],
) -> LabResult<()> {
    if groups.iter().any(|g| g.values.len() != series_names.len()) {
        return Err(LabError::Invalid(
            "every bar group needs one value per series".into(),
        ));
    }
    let root = canvas(path)?;
    let (lo, hi) =
        decades(groups.iter().flat_map(|g| g.values.iter().copied())).unwrap_or((0.1, 10.0));
    let n = groups.len().max(1);
    let mut chart = ChartBuilder::on(&root)
        .caption(labels.title, (FONT, 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(80)
        .build_cartesian_2d(-0.5..n as f64 - 0.5, (lo..hi).log_scale())
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
        .x_labels(n.min(24))
        .x_label_formatter(&label_of)
        // Few labels: plotters then names only the decades; more would name every
        // 2..9 multiple as well, crowding a narrow range.
        .y_labels(6)
        .y_label_formatter(&log_tick)
        .light_line_style(WHITE.mix(0.0))
        .x_desc(labels.x)
        .y_desc(labels.y)
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 18))
        .draw()
        .map_err(draw_err)?;
    let width = 0.8 / series_names.len().max(1) as f64;
    let drawable = |v: f64| v.is_finite() && v > 0.0;
    for (s, name) in series_names.iter().enumerate() {
        let c = colour(s);
        let x0 = |g: usize| g as f64 - 0.4 + width * s as f64;
        chart
            .draw_series(
                groups
                    .iter()
                    .enumerate()
                    .filter(|(_, group)| drawable(group.values[s]))
                    .map(|(g, group)| {
                        // Bars rise from the axis floor: on a log axis there is no zero.
                        Rectangle::new([(x0(g), lo), (x0(g) + width, group.values[s])], c.filled())
                    }),
            )
            .map_err(draw_err)?
            .label(name.as_str())
            .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 16, y + 6)], c.filled()));
        chart
            .draw_series(
                groups
                    .iter()
                    .enumerate()
                    .filter(|(_, group)| !drawable(group.values[s]))
                    .map(|(g, _)| {
                        Text::new("n/a", (x0(g), lo * 1.15), (FONT, 11).into_font().color(&c))
                    }),
            )
            .map_err(draw_err)?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .label_font((FONT, 15))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()
        .map_err(draw_err)?;
    root.present().map_err(draw_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG_SIGNATURE: [u8; 8] = [0x89, b'P', b'N', b'G', 0x0D, 0x0A, 0x1A, 0x0A];

    /// A file in the temporary directory, no directory of its own, so nothing is
    /// left once `assert_png` removes the file.
    fn temp_png(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("kura-plot-test-{}-{name}", std::process::id()))
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
    fn filled_markers_fit_inside_earlier_rings() {
        for s in (1..24).step_by(2) {
            let (filled, hollow) = marker_radius(s);
            assert!(!hollow);
            for t in (0..s).step_by(2) {
                let (ring, hollow) = marker_radius(t);
                assert!(hollow);
                // A filled square's corner reaches r·√2; 2 px of ring stay clear
                // along its sides at least, and a filled circle clears it fully.
                assert!(
                    filled + 2 <= ring,
                    "series {s} (r {filled}) hides ring {t} (r {ring})"
                );
            }
        }
        assert_eq!(tick(&20.0), "20");
        assert_eq!(tick(&2.5), "2.5");
        assert_eq!(y_tick(&400_000.0, true), "400k");
        assert_eq!(y_tick(&0.0, true), "0");
    }

    #[test]
    fn line_chart_writes_a_png() {
        let path = temp_png("lines.png");
        let series = vec![
            Series::line("lru", vec![(2.0, 0.1), (3.0, 0.15), (4.0, 0.2)]),
            Series::line("demote", vec![(2.0, 0.3), (3.0, 0.45), (4.0, 0.6)]),
            Series::reference("L/D", vec![(2.0, 0.2), (4.0, 0.4)]),
            Series::faint(0, vec![(2.0, 0.12), (3.0, 0.13), (4.0, 0.22)]),
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
    fn log_bar_chart_spans_whole_decades_and_skips_missing_values() {
        let (lo, hi) = decades([0.003, 2.5].into_iter()).unwrap();
        assert!(
            (lo - 0.000999).abs() < 1e-12 && (hi - 10.01).abs() < 1e-9,
            "{lo} {hi}"
        );
        let (lo, hi) = decades([0.02, 0.21].into_iter()).unwrap();
        assert!(
            (lo - 0.00999).abs() < 1e-12 && (hi - 1.001).abs() < 1e-9,
            "{lo} {hi}"
        );
        assert_eq!(decades([f64::NAN, 0.0].into_iter()), None);
        assert_eq!(log_tick(&0.01), "0.01");
        assert_eq!(log_tick(&100.0), "100");
        assert_eq!(log_tick(&0.000_999_999_9), "0.001");
        assert_eq!(log_tick(&2.5), "2.5");
        let path = temp_png("log-bars.png");
        let names = vec!["kura".to_string(), "postgres".to_string()];
        let groups = vec![
            BarGroup {
                label: "A".into(),
                values: vec![0.002, 1.5],
            },
            BarGroup {
                label: "B".into(),
                values: vec![0.02, f64::NAN],
            },
        ];
        let labels = Labels {
            title: "times",
            x: "query",
            y: "seconds",
        };
        grouped_bar_chart_log_y(&path, &labels, &names, &groups).unwrap();
        assert_png(&path);
        // Nothing drawable still gives axes, not an error.
        let path = temp_png("log-empty.png");
        let empty = vec![BarGroup {
            label: "A".into(),
            values: vec![f64::NAN, 0.0],
        }];
        grouped_bar_chart_log_y(&path, &labels, &names, &empty).unwrap();
        assert_png(&path);
        assert!(grouped_bar_chart_log_y(
            &temp_png("bad.png"),
            &labels,
            &names,
            &groups[..1]
                .iter()
                .map(|g| BarGroup {
                    label: g.label.clone(),
                    values: vec![1.0],
                })
                .collect::<Vec<_>>()
        )
        .is_err());
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
