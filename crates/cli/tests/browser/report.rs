//! `check_report`: a report page opened in headless Chromium, screenshotted, and checked against
//! the report contract of issue 17.

use std::collections::{BTreeSet, HashMap};
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

use super::cdp::{file_url, without_fragment, Chromium, Page, VIEWPORT_WIDTH};

/// A pixel differs when one of its channels differs by more than this (anti-aliasing and
/// rounding stay below it).
const CHANNEL_TOLERANCE: u8 = 8;

/// A plot is non-blank when at least this share of its area (and at least `MIN_INK_PIXELS`)
/// differs both from what the page shows without the plot and from the plot's own backdrop:
/// 1/2000 of a 800 x 500 plot is 200 pixels, less than its axes alone.
const MIN_INK_SHARE: f64 = 1.0 / 2000.0;
const MIN_INK_PIXELS: usize = 20;

/// Larger pages are refused rather than cut.
const MAX_PAGE_HEIGHT: u32 = 32_000;
const MAX_PAGE_WIDTH: u32 = 8_000;

/// The page's state after loading: read with a script the check runs (the page needs none).
const MEASURE: &str = r#"JSON.stringify((() => {
  const root = document.documentElement;
  const figures = [...document.querySelectorAll('figure.plot')].map(figure => {
    const svgs = [...figure.querySelectorAll('svg')].filter(s => !s.parentElement.closest('svg'));
    const caption = figure.querySelector('figcaption');
    const box = svgs.length ? svgs[0].getBoundingClientRect() : null;
    return {
      id: figure.id,
      svgs: svgs.length,
      caption: caption ? caption.textContent.trim() : null,
      box: box && { x: box.left + scrollX, y: box.top + scrollY, width: box.width, height: box.height },
    };
  });
  return {
    width: Math.ceil(root.scrollWidth),
    height: Math.ceil(Math.max(root.scrollHeight, document.body ? document.body.scrollHeight : 0)),
    figures,
  };
})())"#;

/// Opens `html` in headless Chromium, writes a full-page screenshot to `screenshot`, and checks:
/// no console errors (console API errors and asserts, uncaught exceptions, errors the browser
/// logs), no request but for the file itself (`data:` URLs are part of the file), exactly
/// `expected_plots` `figure.plot` elements, each with one `<svg>` and a `<figcaption>`, and
/// every plot's svg area non-blank. Panics listing every failure; fails too when Chromium is
/// not installed, saying how to install it.
pub fn check_report(html: &Path, expected_plots: usize, screenshot: &Path) {
    let started = Instant::now();
    let problems = report_problems(html, expected_plots, screenshot);
    if !problems.is_empty() {
        panic!(
            "{} fails the report checks (screenshot: {}):\n  - {}",
            html.display(),
            screenshot.display(),
            problems.join("\n  - ")
        );
    }
    eprintln!(
        "{}: {expected_plots} plots checked in Chromium in {:.2} s",
        html.display(),
        started.elapsed().as_secs_f64()
    );
}

/// Every way `html` breaks the contract, one line each; empty when it holds. Panics when the
/// check itself cannot run (no Chromium, the browser hangs or dies).
pub fn report_problems(html: &Path, expected_plots: usize, screenshot: &Path) -> Vec<String> {
    let html = std::fs::canonicalize(html)
        .unwrap_or_else(|e| panic!("report {} cannot be opened: {e}", html.display()));
    let browser = Chromium::launch().unwrap_or_else(|e| panic!("{e}"));
    match inspect(&browser, &html, expected_plots, screenshot) {
        Ok(problems) => problems,
        Err(e) => panic!(
            "the browser check of {} could not run: {e}\nChromium's log ends:\n{}",
            html.display(),
            browser.log_tail()
        ),
    }
}

fn inspect(
    browser: &Chromium,
    html: &Path,
    expected_plots: usize,
    screenshot: &Path,
) -> Result<Vec<String>, String> {
    let url = file_url(html);
    let page = browser.new_page()?;
    for domain in ["Runtime", "Log", "Network", "Page"] {
        page.call(&format!("{domain}.enable"), json!({}))?;
    }
    page.call(
        "Fetch.enable",
        json!({ "patterns": [{ "urlPattern": "*" }] }),
    )?;
    browser.allow(&url);

    let navigated = page.call("Page.navigate", json!({ "url": url }))?;
    if let Some(error) = navigated.get("errorText").and_then(Value::as_str) {
        return Ok(vec![format!("the page did not load: {error}")]);
    }
    wait_until_loaded(&page, &url)?;

    let mut problems = Vec::new();
    let layout = measure(&page)?;
    // Wider than the window only when the content overflows it.
    let width = layout.width.clamp(VIEWPORT_WIDTH, MAX_PAGE_WIDTH);
    let height = layout.height.clamp(1, MAX_PAGE_HEIGHT);
    if layout.width > MAX_PAGE_WIDTH {
        problems.push(format!(
            "the page is {} px wide; the check takes at most {MAX_PAGE_WIDTH}",
            layout.width
        ));
    }
    if layout.height > MAX_PAGE_HEIGHT {
        problems.push(format!(
            "the page is {} px tall; the check takes at most {MAX_PAGE_HEIGHT}",
            layout.height
        ));
    }
    // The whole page in one viewport: one screenshot holds every plot at its place.
    page.call(
        "Emulation.setDeviceMetricsOverride",
        json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
    )?;
    let layout = measure(&page)?;
    let png = capture(&page)?;
    if let Some(dir) = screenshot.parent() {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    std::fs::write(screenshot, &png).map_err(|e| format!("{}: {e}", screenshot.display()))?;
    let with_plots = Image::decode(&png)?;
    // What the page shows where each plot is, once the plots are hidden (layout unchanged).
    page.evaluate(
        "for (const svg of document.querySelectorAll('figure.plot svg')) \
         svg.style.visibility = 'hidden'; \
         new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))",
    )?;
    let without_plots = Image::decode(&capture(&page)?)?;

    if layout.figures.len() != expected_plots {
        problems.push(format!(
            "expected {expected_plots} plots (figure.plot), found {}{}",
            layout.figures.len(),
            list_ids(&layout.figures)
        ));
    }
    let scale = with_plots.width as f64 / width as f64;
    for (i, figure) in layout.figures.iter().enumerate() {
        let name = if figure.id.is_empty() {
            format!("plot {} (no id)", i + 1)
        } else {
            format!("plot #{}", figure.id)
        };
        if figure.svgs != 1 {
            problems.push(format!(
                "{name} holds {} <svg> elements, not 1",
                figure.svgs
            ));
        }
        match figure.caption.as_deref() {
            None => problems.push(format!("{name} has no <figcaption>")),
            Some("") => problems.push(format!("{name} has an empty <figcaption>")),
            Some(_) => {}
        }
        if let Some(b) = figure.svg_box {
            if let Some(problem) = blank(&name, b, scale, &with_plots, &without_plots) {
                problems.push(problem);
            }
        }
    }

    // Every renderer event before this marker has been read once the marker is seen.
    page.evaluate("console.debug('kleinrock-check-done')")?;
    let session = page.session().to_string();
    browser.wait_for_event(Duration::from_secs(10), |event| {
        event["sessionId"] == session.as_str()
            && event["method"] == "Runtime.consoleAPICalled"
            && event["params"]["args"][0]["value"] == "kleinrock-check-done"
    })?;
    let events: Vec<Value> = browser
        .events()
        .into_iter()
        .filter(|event| event["sessionId"] == session.as_str())
        .collect();
    problems.extend(console_errors(&events));
    problems.extend(foreign_requests(&events, &url));
    Ok(problems)
}

fn wait_until_loaded(page: &Page, url: &str) -> Result<(), String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let state = page.evaluate("[location.href, document.readyState].join(' ')")?;
        if state.as_str() == Some(&format!("{url} complete")) {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("{url} did not finish loading (last: {state})"));
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    page.evaluate("document.fonts.ready.then(() => document.fonts.status)")?;
    Ok(())
}

struct Layout {
    width: u32,
    height: u32,
    figures: Vec<Figure>,
}

struct Figure {
    id: String,
    svgs: u64,
    caption: Option<String>,
    svg_box: Option<[f64; 4]>,
}

fn measure(page: &Page) -> Result<Layout, String> {
    let text = page.evaluate(MEASURE)?;
    let value: Value = serde_json::from_str(text.as_str().unwrap_or_default())
        .map_err(|e| format!("the measuring script's answer: {e}"))?;
    let figures = value["figures"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|f| Figure {
            id: f["id"].as_str().unwrap_or_default().to_string(),
            svgs: f["svgs"].as_u64().unwrap_or(0),
            caption: f["caption"].as_str().map(str::to_string),
            svg_box: f["box"]
                .as_object()
                .map(|b| ["x", "y", "width", "height"].map(|k| b[k].as_f64().unwrap_or(0.0))),
        })
        .collect();
    Ok(Layout {
        width: value["width"].as_u64().unwrap_or(0) as u32,
        height: value["height"].as_u64().unwrap_or(0) as u32,
        figures,
    })
}

fn list_ids(figures: &[Figure]) -> String {
    let ids: Vec<&str> = figures.iter().map(|f| f.id.as_str()).collect();
    if ids.is_empty() {
        String::new()
    } else {
        format!(" (ids: {})", ids.join(", "))
    }
}

fn capture(page: &Page) -> Result<Vec<u8>, String> {
    let shot = page.call(
        "Page.captureScreenshot",
        json!({ "format": "png", "fromSurface": true }),
    )?;
    base64::engine::general_purpose::STANDARD
        .decode(shot["data"].as_str().unwrap_or_default())
        .map_err(|e| format!("the screenshot's base64: {e}"))
}

/// `Some(reason)` when the plot's area is blank: too few pixels differ both from the page
/// without the plot and from the plot's most common colour (its own backdrop, such as the
/// white rectangle plotters fills a chart with).
fn blank(
    name: &str,
    [x, y, width, height]: [f64; 4],
    scale: f64,
    with_plots: &Image,
    without_plots: &Image,
) -> Option<String> {
    let x0 = ((x * scale).floor().max(0.0) as u32).min(with_plots.width);
    let y0 = ((y * scale).floor().max(0.0) as u32).min(with_plots.height);
    let x1 = (((x + width) * scale).ceil().max(0.0) as u32).min(with_plots.width);
    let y1 = (((y + height) * scale).ceil().max(0.0) as u32).min(with_plots.height);
    let area = (x1.saturating_sub(x0) as usize) * (y1.saturating_sub(y0) as usize);
    if area == 0 {
        return Some(format!(
            "{name}: its <svg> has no visible area ({width} x {height} px at {x}, {y})"
        ));
    }
    let mut counts: HashMap<[u8; 4], usize> = HashMap::new();
    for py in y0..y1 {
        for px in x0..x1 {
            *counts.entry(with_plots.pixel(px, py)).or_default() += 1;
        }
    }
    let backdrop = counts
        .iter()
        .max_by_key(|(colour, n)| (**n, **colour))
        .map(|(colour, _)| *colour)
        .unwrap();
    let mut ink = 0;
    for py in y0..y1 {
        for px in x0..x1 {
            let p = with_plots.pixel(px, py);
            if differs(p, without_plots.pixel(px, py)) && differs(p, backdrop) {
                ink += 1;
            }
        }
    }
    let needed = MIN_INK_PIXELS.max((area as f64 * MIN_INK_SHARE).ceil() as usize);
    (ink < needed).then(|| {
        format!(
            "{name} is blank: {ink} of its {area} pixels differ from the page background and \
             from its backdrop {backdrop:?} (at least {needed} needed)"
        )
    })
}

fn differs(a: [u8; 4], b: [u8; 4]) -> bool {
    a.iter()
        .zip(b)
        .any(|(a, b)| a.abs_diff(b) > CHANNEL_TOLERANCE)
}

/// Console API errors and failed asserts, uncaught exceptions, and errors the browser logs
/// (a failed load, a refused resource).
fn console_errors(events: &[Value]) -> Vec<String> {
    let mut errors = Vec::new();
    for event in events {
        let params = &event["params"];
        match event["method"].as_str() {
            Some("Runtime.consoleAPICalled")
                if matches!(params["type"].as_str(), Some("error" | "assert")) =>
            {
                let text: Vec<String> = params["args"]
                    .as_array()
                    .map(Vec::as_slice)
                    .unwrap_or_default()
                    .iter()
                    .map(remote_object_text)
                    .collect();
                errors.push(format!(
                    "console {}: {}{}",
                    params["type"].as_str().unwrap_or_default(),
                    text.join(" "),
                    location(&params["stackTrace"]["callFrames"][0])
                ));
            }
            Some("Runtime.exceptionThrown") => {
                let details = &params["exceptionDetails"];
                // The description's first line; the rest is the stack, given as the location.
                let text = details["exception"]["description"]
                    .as_str()
                    .or(details["text"].as_str())
                    .and_then(|text| text.lines().next())
                    .unwrap_or("(no description)");
                errors.push(format!("uncaught exception: {text}{}", location(details)));
            }
            Some("Log.entryAdded") if params["entry"]["level"] == "error" => {
                let entry = &params["entry"];
                errors.push(format!(
                    "browser error ({}): {}{}",
                    entry["source"].as_str().unwrap_or("?"),
                    entry["text"].as_str().unwrap_or_default(),
                    entry["url"]
                        .as_str()
                        .map(|u| format!(" [{u}]"))
                        .unwrap_or_default()
                ));
            }
            _ => {}
        }
    }
    errors
}

fn remote_object_text(object: &Value) -> String {
    match &object["value"] {
        Value::String(s) => s.clone(),
        Value::Null => object["description"]
            .as_str()
            .or(object["unserializableValue"].as_str())
            .unwrap_or(object["type"].as_str().unwrap_or("?"))
            .to_string(),
        other => other.to_string(),
    }
}

fn location(frame: &Value) -> String {
    match (frame["url"].as_str(), frame["lineNumber"].as_u64()) {
        (Some(url), Some(line)) if !url.is_empty() => format!(" (at {url}:{})", line + 1),
        (_, Some(line)) => format!(" (at line {})", line + 1),
        _ => String::new(),
    }
}

/// Every URL the page asked for but its own (`data:` and `about:` URLs load nothing).
fn foreign_requests(events: &[Value], own: &str) -> Vec<String> {
    let mut urls = BTreeSet::new();
    for event in events {
        let url = match event["method"].as_str() {
            Some("Network.requestWillBeSent") | Some("Fetch.requestPaused") => {
                event["params"]["request"]["url"].as_str()
            }
            _ => None,
        };
        if let Some(url) = url {
            if without_fragment(url) != own
                && !url.starts_with("data:")
                && !url.starts_with("about:")
            {
                urls.insert(url.to_string());
            }
        }
    }
    urls.into_iter()
        .map(|url| format!("request leaving the file: {url}"))
        .collect()
}

/// A decoded screenshot as 8-bit RGBA.
struct Image {
    width: u32,
    height: u32,
    rgba: Vec<u8>,
}

/// The top `height` pixel rows of the PNG screenshot `png_bytes`, as PNG: the part of a long
/// report the README shows.
pub fn top_of(png_bytes: &[u8], height: u32) -> Result<Vec<u8>, String> {
    let image = Image::decode(png_bytes)?;
    let rows = height.min(image.height);
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, image.width, rows);
        encoder.set_color(png::ColorType::Rgba);
        encoder.set_depth(png::BitDepth::Eight);
        let mut writer = encoder
            .write_header()
            .map_err(|e| format!("PNG header: {e}"))?;
        let bytes = (image.width * rows * 4) as usize;
        writer
            .write_image_data(&image.rgba[..bytes])
            .map_err(|e| format!("PNG data: {e}"))?;
    }
    Ok(out)
}

impl Image {
    fn decode(png_bytes: &[u8]) -> Result<Image, String> {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder
            .read_info()
            .map_err(|e| format!("screenshot PNG: {e}"))?;
        let size = reader
            .output_buffer_size()
            .ok_or("screenshot PNG too large")?;
        let mut buffer = vec![0; size];
        let frame = reader
            .next_frame(&mut buffer)
            .map_err(|e| format!("screenshot PNG: {e}"))?;
        buffer.truncate(frame.buffer_size());
        let rgba = match frame.color_type {
            png::ColorType::Rgba => buffer,
            png::ColorType::Rgb => buffer
                .chunks_exact(3)
                .flat_map(|p| [p[0], p[1], p[2], 255])
                .collect(),
            png::ColorType::GrayscaleAlpha => buffer
                .chunks_exact(2)
                .flat_map(|p| [p[0], p[0], p[0], p[1]])
                .collect(),
            png::ColorType::Grayscale => buffer.iter().flat_map(|&g| [g, g, g, 255]).collect(),
            other => {
                return Err(format!(
                    "screenshot PNG in an unexpected colour type {other:?}"
                ))
            }
        };
        Ok(Image {
            width: frame.width,
            height: frame.height,
            rgba,
        })
    }

    fn pixel(&self, x: u32, y: u32) -> [u8; 4] {
        let i = 4 * (y as usize * self.width as usize + x as usize);
        [
            self.rgba[i],
            self.rgba[i + 1],
            self.rgba[i + 2],
            self.rgba[i + 3],
        ]
    }
}
