//! One self-contained HTML page: an inline style sheet, headings, tables, text and inline SVG
//! figures; no script, no reference to anything outside the file.

use std::fmt::Write;

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em auto;max-width:1100px;color:#222;\
padding:0 1em}h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;\
margin-top:2em}h3{font-size:1.05em}table{border-collapse:collapse;margin:0.8em 0;\
font-size:0.9em}th,td{border:1px solid #ccc;padding:0.2em 0.5em;text-align:right}\
th:first-child,td:first-child{text-align:left}th{background:#f3f3f3}\
figure.plot{margin:0.8em 0;break-inside:avoid}figure.plot svg{max-width:100%;height:auto}\
figcaption{font-size:0.85em;color:#555}pre{background:#f7f7f7;padding:0.6em;\
overflow-x:auto;font-size:0.85em}.holds{color:#1b5e20;font-weight:bold}\
.fails{color:#b71c1c;font-weight:bold}@media print{body{max-width:none}h2{break-after:avoid}}";

/// A table cell: its text, and the number it shows (for scripts and tests), if any.
pub struct Cell {
    /// What is shown.
    pub text: String,
    /// The exact value behind it, as `(metric key, value)`.
    pub value: Option<(String, f64)>,
}

impl Cell {
    /// A cell of text only.
    pub fn text(text: impl Into<String>) -> Cell {
        Cell {
            text: text.into(),
            value: None,
        }
    }
}

/// An HTML page being built.
pub struct Page {
    title: String,
    body: String,
}

impl Page {
    /// An empty page titled `title`.
    pub fn new(title: &str) -> Page {
        let mut p = Page {
            title: title.to_string(),
            body: String::new(),
        };
        p.heading(1, title);
        p
    }

    /// A heading of `level` (1 to 3).
    pub fn heading(&mut self, level: u8, text: &str) {
        let _ = writeln!(self.body, "<h{level}>{}</h{level}>", escape(text));
    }

    /// A paragraph of plain text.
    pub fn paragraph(&mut self, text: &str) {
        let _ = writeln!(self.body, "<p>{}</p>", escape(text));
    }

    /// A paragraph of already-escaped HTML.
    pub fn raw_paragraph(&mut self, html: &str) {
        let _ = writeln!(self.body, "<p>{html}</p>");
    }

    /// Preformatted text.
    pub fn pre(&mut self, text: &str) {
        let _ = writeln!(self.body, "<pre>{}</pre>", escape(text));
    }

    /// A table with `header` and `rows`.
    pub fn table(&mut self, header: &[&str], rows: &[Vec<Cell>]) {
        self.body.push_str("<table>\n<tr>");
        for h in header {
            let _ = write!(self.body, "<th>{}</th>", escape(h));
        }
        self.body.push_str("</tr>\n");
        for row in rows {
            self.body.push_str("<tr>");
            for c in row {
                match &c.value {
                    Some((key, v)) => {
                        let _ = write!(
                            self.body,
                            "<td data-key=\"{}\" data-value=\"{v:e}\">{}</td>",
                            escape(key),
                            escape(&c.text)
                        );
                    }
                    None => {
                        let _ = write!(self.body, "<td>{}</td>", escape(&c.text));
                    }
                }
            }
            self.body.push_str("</tr>\n");
        }
        self.body.push_str("</table>\n");
    }

    /// A figure: inline SVG `svg` with `caption`, under the unique `id`.
    pub fn figure(&mut self, id: &str, caption: &str, svg: &str) {
        self.write_figure(id, "", caption, svg);
    }

    /// A figure as [`Page::figure`] with `paper` of the paper's values drawn over it, which
    /// its `data-paper` attribute counts (for scripts and tests).
    pub fn paper_figure(&mut self, id: &str, caption: &str, svg: &str, paper: usize) {
        self.write_figure(id, &format!(" data-paper=\"{paper}\""), caption, svg);
    }

    fn write_figure(&mut self, id: &str, attributes: &str, caption: &str, svg: &str) {
        let _ = writeln!(
            self.body,
            "<figure class=\"plot\" id=\"{}\"{attributes}>\n{}\n<figcaption>{}</figcaption>\n</figure>",
            escape(id),
            svg.trim(),
            escape(caption)
        );
    }

    /// The finished document.
    pub fn finish(self) -> String {
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
            escape(&self.title),
            self.body
        )
    }
}

/// `text` with the characters HTML gives a meaning escaped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// An element id made of `parts`: letters, digits and `-` only.
pub fn id(parts: &[&str]) -> String {
    parts
        .iter()
        .map(|p| {
            p.chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("-")
}
