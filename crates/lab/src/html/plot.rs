//! The plots of the HTML reports, drawn as inline SVG with plotters' SVG backend: time series
//! (decimated to the plot's width, keeping each pixel column's minimum and maximum so spikes
//! survive), CDFs, points with confidence intervals, and values per category; over lines and
//! categories, the paper's published values as hollow diamonds. Text is left to the browser's
//! fonts.

use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;

/// Plot size in pixels.
pub const WIDTH: u32 = 760;
/// Plot height in pixels.
pub const HEIGHT: u32 = 260;
/// Horizontal pixels of the plotting area, the columns a series is decimated to.
const AREA_COLUMNS: usize = 680;

/// Line colours, in order of the series.
const PALETTE: [RGBColor; 8] = [
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(255, 127, 14),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(23, 190, 207),
];

/// Background colours of controller modes.
const BANDS: [RGBColor; 6] = [
    RGBColor(255, 236, 179),
    RGBColor(200, 230, 201),
    RGBColor(187, 222, 251),
    RGBColor(248, 187, 208),
    RGBColor(225, 190, 231),
    RGBColor(215, 204, 200),
];

/// One series of a plot: its name and its points.
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Points, in x order; a NaN y breaks the line.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// A series from x and y slices of the same length.
    pub fn new(label: &str, xs: &[f64], ys: &[f64]) -> Series {
        Series {
            label: label.to_string(),
            points: xs.iter().copied().zip(ys.iter().copied()).collect(),
        }
    }
}

/// A value the paper publishes, drawn over our series in the colour of the series it compares
/// with: a hollow diamond at a point; over a span of x or a range of y, a dashed line (or box)
/// with a diamond at either end.
pub struct Mark {
    /// The index of the series it compares with.
    pub series: usize,
    /// x, or the span of x `(from, to)`.
    pub x: (f64, f64),
    /// y, or the range `(low, high)`.
    pub y: (f64, f64),
}

/// The outline of the diamond a paper value is drawn as, in pixels around its point.
const DIAMOND: [(i32, i32); 5] = [(0, -6), (6, 0), (0, 6), (-6, 0), (0, -6)];

/// A span of x over which a controller was in one mode.
pub struct Band {
    /// Start and end, in x units.
    pub from: f64,
    /// End.
    pub to: f64,
    /// The mode.
    pub label: String,
}

/// The spans of constant mode in `modes`, sampled at times `xs`.
pub fn bands(xs: &[f64], modes: &[String]) -> Vec<Band> {
    let mut out: Vec<Band> = Vec::new();
    for (i, (x, m)) in xs.iter().zip(modes).enumerate() {
        let end = xs.get(i + 1).copied().unwrap_or(*x);
        match out.last_mut() {
            Some(b) if b.label == *m => b.to = end,
            _ if m.is_empty() => {}
            _ => out.push(Band {
                from: *x,
                to: end,
                label: m.clone(),
            }),
        }
    }
    out
}

/// The line segments of `points`, each decimated to at most four points per pixel column of
/// the x range `[x0, x1]`: the first, the lowest, the highest and the last of the column, in x
/// order, so that every spike survives. Points whose y is not finite are missing: a line is
/// broken where they leave a whole pixel column empty, and joined over shorter gaps.
pub fn decimate(points: &[(f64, f64)], x0: f64, x1: f64) -> Vec<Vec<(f64, f64)>> {
    let span = (x1 - x0).max(f64::MIN_POSITIVE);
    let column = |x: f64| (((x - x0) / span) * AREA_COLUMNS as f64) as i64;
    let mut segments = Vec::new();
    let mut current: Vec<(f64, f64)> = Vec::new();
    let mut bucket: Vec<(f64, f64)> = Vec::new();
    let mut bucket_col = i64::MIN;
    // The first column after the current one that holds missing points only, so far.
    let mut gap: Option<i64> = None;
    for &(x, y) in points {
        if !x.is_finite() {
            continue;
        }
        let c = column(x);
        if !y.is_finite() {
            gap = gap.or((c > bucket_col).then_some(c));
            continue;
        }
        if c == bucket_col {
            bucket.push((x, y));
            continue;
        }
        flush(&mut bucket, &mut current);
        if gap.is_some_and(|g| g < c) && !current.is_empty() {
            segments.push(std::mem::take(&mut current));
        }
        gap = None;
        bucket_col = c;
        bucket.push((x, y));
    }
    flush(&mut bucket, &mut current);
    if !current.is_empty() {
        segments.push(current);
    }
    segments
}

/// Appends the first, lowest, highest and last points of `bucket` to `line`, in x order.
fn flush(bucket: &mut Vec<(f64, f64)>, line: &mut Vec<(f64, f64)>) {
    if bucket.len() <= 4 {
        line.append(bucket);
        return;
    }
    let by_y = |a: &&(f64, f64), b: &&(f64, f64)| a.1.total_cmp(&b.1);
    let lo = *bucket.iter().min_by(by_y).expect("not empty");
    let hi = *bucket.iter().max_by(by_y).expect("not empty");
    let mut keep = vec![bucket[0], lo, hi, bucket[bucket.len() - 1]];
    keep.sort_by(|a, b| a.0.total_cmp(&b.0));
    keep.dedup();
    line.extend(keep);
    bucket.clear();
}

/// The range of the finite values of `values`, widened so that it is never empty and starts at
/// zero for non-negative data.
fn range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !lo.is_finite() {
        return (0.0, 1.0);
    }
    let lo = if lo >= 0.0 { 0.0 } else { lo };
    if hi - lo <= f64::EPSILON * hi.abs().max(1.0) {
        return (lo, lo + 1.0);
    }
    let pad = ((hi - lo) * 0.05).max(hi.abs() * 0.05);
    (lo, hi + pad)
}

/// The x and the y of every point of `series` and of every end of `marks`.
fn coordinates<'a>(
    series: &'a [Series],
    marks: &'a [Mark],
) -> impl Iterator<Item = (f64, f64)> + Clone + 'a {
    let ends = marks.iter().flat_map(|m| [(m.x.0, m.y.0), (m.x.1, m.y.1)]);
    series
        .iter()
        .flat_map(|s| s.points.iter().copied())
        .chain(ends)
}

/// A line plot of `series` against x (with `bands` of controller modes behind them and the
/// paper's values `paper` over them) as SVG.
pub fn lines(
    title: &str,
    x_label: &str,
    y_label: &str,
    series: &[Series],
    bands: &[Band],
    paper: &[Mark],
) -> Result<String, String> {
    let points = coordinates(series, paper);
    let xs = || points.clone().map(|p| p.0).filter(|x| x.is_finite());
    let (x0, mut x1) = range(xs());
    let mut x0 = xs().fold(x0, f64::min);
    if !paper.is_empty() {
        // x from where the data start, and room on the right for the legend, so that it
        // covers none of the paper's values.
        x0 = xs().fold(x1, f64::min);
        x1 += 0.35 * (x1 - x0);
    }
    let (y0, y1) = range(points.clone().map(|p| p.1));
    let frame = (x0, x1, y0, y1);
    render(title, |root| {
        draw_lines(
            root,
            title,
            (x_label, y_label),
            frame,
            (series, paper),
            bands,
        )
    })
}

/// The SVG that `draw` makes on a plot-sized canvas; an error names the plot's `title`.
fn render(title: &str, draw: impl FnOnce(&Area) -> DrawResult) -> Result<String, String> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (WIDTH, HEIGHT)).into_drawing_area();
        draw(&root).map_err(|e| format!("cannot draw `{title}`: {e}"))?;
    }
    Ok(svg)
}

type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;
type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;
type DrawResult = Result<(), Box<dyn std::error::Error>>;

fn draw_lines(
    root: &Area,
    title: &str,
    labels: (&str, &str),
    (x0, x1, y0, y1): (f64, f64, f64, f64),
    (series, paper): (&[Series], &[Mark]),
    bands: &[Band],
) -> DrawResult {
    let mut chart = frame(root, title, (x0, x1, y0, y1))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .max_light_lines(0)
        .x_desc(labels.0)
        .y_desc(labels.1)
        .y_label_formatter(&|v| short(*v))
        .draw()?;
    let modes = distinct(bands.iter().map(|b| b.label.as_str()));
    for b in bands {
        let k = modes.iter().position(|m| *m == b.label).unwrap_or(0);
        let colour = BANDS[k % BANDS.len()];
        chart.draw_series(std::iter::once(Rectangle::new(
            [(b.from, y0), (b.to, y1)],
            colour.filled(),
        )))?;
    }
    for (k, m) in modes.iter().enumerate() {
        let colour = BANDS[k % BANDS.len()];
        chart
            .draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())?
            .label(format!("mode {m}"))
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 16, y + 5)], colour.filled()));
    }
    for (k, s) in series.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        for segment in decimate(&s.points, x0, x1) {
            chart.draw_series(LineSeries::new(segment, colour.stroke_width(1)))?;
        }
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
            .label(s.label.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 16, y)], colour));
    }
    finish(root, &mut chart, paper)
}

/// The white plot area of `root` with `title`, its axes over `x0..x1` and `y0..y1`.
fn frame<'a, 'b>(
    root: &'a Area<'b>,
    title: &str,
    (x0, x1, y0, y1): (f64, f64, f64, f64),
) -> Result<Chart<'a, 'b>, Box<dyn std::error::Error>> {
    root.fill(&WHITE)?;
    let chart = ChartBuilder::on(root)
        .caption(title, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(34)
        .y_label_area_size(62)
        .build_cartesian_2d(x0..x1, y0..y1)?;
    Ok(chart)
}

/// Draws the paper's values `marks` (with a legend entry), then the legend.
fn finish<'a, 'b>(root: &'a Area<'b>, chart: &mut Chart<'a, 'b>, marks: &[Mark]) -> DrawResult {
    for m in marks {
        let style = PALETTE[m.series % PALETTE.len()].stroke_width(2);
        let ((x0, x1), (y0, y1)) = (m.x, m.y);
        let mut ends = vec![(x0, y0)];
        if (x0, y0) != (x1, y1) {
            ends.push((x1, y1));
            let outline = vec![(x0, y0), (x1, y0), (x1, y1), (x0, y1), (x0, y0)];
            chart.draw_series(std::iter::once(DashedPathElement::new(
                outline, 6, 4, style,
            )))?;
        }
        chart.draw_series(
            ends.into_iter()
                .map(|p| EmptyElement::at(p) + PathElement::new(DIAMOND.to_vec(), style)),
        )?;
    }
    if !marks.is_empty() {
        chart
            .draw_series(std::iter::empty::<PathElement<(f64, f64)>>())?
            .label("paper")
            .legend(|(x, y)| {
                let outline = DIAMOND.iter().map(|(dx, dy)| (x + 8 + dx, y + dy));
                PathElement::new(outline.collect::<Vec<_>>(), BLACK.stroke_width(2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .background_style(WHITE.mix(0.6))
        .border_style(BLACK.mix(0.3))
        .draw()?;
    root.present()?;
    Ok(())
}

/// One value per category and series, as dots (x is the category's index), with the paper's
/// values `paper` over them, as SVG.
pub fn dots(
    title: &str,
    (x_label, y_label): (&str, &str),
    categories: &[String],
    series: &[Series],
    paper: &[Mark],
) -> Result<String, String> {
    let (y0, y1) = range(coordinates(series, paper).map(|p| p.1));
    // Room on the right for the legend, so that it covers no dot.
    let n = categories.len() as f64;
    let x1 = n - 0.5 + (0.35 * n).max(0.8);
    let frame = (-0.5, x1, y0, y1);
    render(title, |root| {
        draw_dots(
            root,
            title,
            (x_label, y_label),
            frame,
            (series, paper),
            categories,
        )
    })
}

fn draw_dots(
    root: &Area,
    title: &str,
    labels: (&str, &str),
    (x0, x1, y0, y1): (f64, f64, f64, f64),
    (series, paper): (&[Series], &[Mark]),
    categories: &[String],
) -> DrawResult {
    let mut chart = frame(root, title, (x0, x1, y0, y1))?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .max_light_lines(0)
        .x_desc(labels.0)
        .y_desc(labels.1)
        .x_labels(((x1 - x0) * 2.0).ceil() as usize + 1)
        .x_label_formatter(&|v| category(categories, *v))
        .y_label_formatter(&|v| short(*v))
        .draw()?;
    for (k, s) in series.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        let finite = s.points.iter().filter(|p| p.1.is_finite());
        chart
            .draw_series(finite.map(|&p| Circle::new(p, 4, colour.filled())))?
            .label(s.label.as_str())
            .legend(move |(x, y)| Circle::new((x + 8, y), 4, colour.filled()));
    }
    finish(root, &mut chart, paper)
}

/// The name of the category at axis position `v`, or nothing between categories.
fn category(categories: &[String], v: f64) -> String {
    let k = v.round();
    let named = (v - k).abs() < 1e-6 && k >= 0.0;
    let name = named.then(|| categories.get(k as usize)).flatten();
    name.cloned().unwrap_or_default()
}

/// The distinct values of `items`, in first-seen order.
fn distinct<'a>(items: impl Iterator<Item = &'a str>) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// `v` in at most four significant digits with an SI prefix (12.5k, 3.2M).
pub fn short(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    let text = format!("{scaled:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    format!("{text}{suffix}")
}

/// A point with a 95 % confidence interval (`lo`, `hi`; equal to `y` without one).
pub struct Interval {
    /// x.
    pub x: f64,
    /// Mean.
    pub y: f64,
    /// Lower bound.
    pub lo: f64,
    /// Upper bound.
    pub hi: f64,
}

/// Points with confidence intervals, one series per label, joined by lines, as SVG; with
/// `categories`, x is the index of a category and the axis shows its name.
pub fn intervals(
    title: &str,
    (x_label, y_label): (&str, &str),
    series: &[(String, Vec<Interval>)],
    categories: &[String],
) -> Result<String, String> {
    let all = || series.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, x1) = range(all().map(|p| p.x));
    x0 = all()
        .map(|p| p.x)
        .filter(|x| x.is_finite())
        .fold(x0, f64::min);
    let (y0, y1) = range(all().flat_map(|p| [p.lo, p.hi, p.y]));
    // Room on the right for the legend, so that it covers no point.
    let pad = ((x1 - x0) * 0.05).max(1e-9);
    let frame = (x0 - pad, x1 + 9.0 * pad, y0, y1);
    render(title, |root| {
        draw_intervals(root, title, (x_label, y_label), frame, series, categories)
    })
}

fn draw_intervals(
    root: &Area,
    title: &str,
    labels: (&str, &str),
    (x0, x1, y0, y1): (f64, f64, f64, f64),
    series: &[(String, Vec<Interval>)],
    categories: &[String],
) -> DrawResult {
    let x_text = |v: &f64| {
        if categories.is_empty() {
            return short(*v);
        }
        category(categories, *v)
    };
    let mut chart = frame(root, title, (x0, x1, y0, y1))?;
    chart
        .configure_mesh()
        .max_light_lines(0)
        .x_desc(labels.0)
        .y_desc(labels.1)
        .x_labels(if categories.is_empty() {
            10
        } else {
            categories.len() + 2
        })
        .x_label_formatter(&x_text)
        .y_label_formatter(&|v| short(*v))
        .draw()?;
    for (k, (label, points)) in series.iter().enumerate() {
        let colour = PALETTE[k % PALETTE.len()];
        let line: Vec<(f64, f64)> = points.iter().map(|p| (p.x, p.y)).collect();
        chart.draw_series(LineSeries::new(line, colour.stroke_width(1)))?;
        chart.draw_series(
            points
                .iter()
                .map(|p| ErrorBar::new_vertical(p.x, p.lo, p.y, p.hi, colour.filled(), 6)),
        )?;
        chart
            .draw_series(
                points
                    .iter()
                    .map(|p| Circle::new((p.x, p.y), 3, colour.filled())),
            )?
            .label(label.as_str())
            .legend(move |(x, y)| Circle::new((x + 8, y), 3, colour.filled()));
    }
    finish(root, &mut chart, &[])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimation_keeps_every_spike_and_splits_at_gaps() {
        // 100000 points over one plot: a single spike must survive.
        let mut points: Vec<(f64, f64)> = (0..100_000).map(|i| (i as f64, 1.0)).collect();
        points[54_321].1 = 1000.0;
        let segments = decimate(&points, 0.0, 100_000.0);
        assert_eq!(segments.len(), 1);
        assert!(segments[0].len() <= 4 * AREA_COLUMNS + 4);
        assert!(segments[0].iter().any(|p| p.1 == 1000.0));
        // A missing point inside a pixel column joins the line; an empty column breaks it.
        points[10].1 = f64::NAN;
        assert_eq!(decimate(&points, 0.0, 100_000.0).len(), 1);
        for p in &mut points[1000..2000] {
            p.1 = f64::NAN;
        }
        assert_eq!(decimate(&points, 0.0, 100_000.0).len(), 2);
        // Points sparser than the pixel columns make one line; a missing one breaks it.
        let mut sparse: Vec<(f64, f64)> = (0..10).map(|i| (i as f64, 1.0)).collect();
        assert_eq!(decimate(&sparse, 0.0, 9.0), vec![sparse.clone()]);
        sparse[5].1 = f64::NAN;
        assert_eq!(decimate(&sparse, 0.0, 9.0).len(), 2);
    }

    #[test]
    fn bands_join_equal_modes() {
        let xs = [0.0, 1.0, 2.0, 3.0];
        let modes: Vec<String> = ["a", "a", "b", "b"].iter().map(|s| s.to_string()).collect();
        let b = bands(&xs, &modes);
        assert_eq!(b.len(), 2);
        assert_eq!(
            (b[0].from, b[0].to, b[1].from, b[1].to),
            (0.0, 2.0, 2.0, 3.0)
        );
    }
}
