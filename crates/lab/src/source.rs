//! Scenario text before it is parsed: its size and nesting are checked first, so no input makes
//! the parser allocate without bound or recurse deeply, and a TOML syntax error is shown with a
//! short excerpt of its line, however long the line.

use std::path::Path;

/// Largest scenario file or text: 4 MiB (a scenario of 10000 flows is about 2 MB).
pub const MAX_TEXT_BYTES: u64 = 4 << 20;
/// Deepest nesting of arrays and inline tables.
pub const MAX_NESTING: usize = 32;
/// Characters of the offending line shown on each side of a syntax error.
const EXCERPT_HALF_WIDTH: usize = 100;

/// Reads the scenario file (or a link's trace file) at `path`, refusing one larger than
/// [`MAX_TEXT_BYTES`] before reading it.
pub fn read(path: &Path) -> Result<String, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("cannot read: {e}"))?
        .len();
    check_size(size)?;
    std::fs::read_to_string(path).map_err(|e| format!("cannot read: {e}"))
}

fn check_size(size: u64) -> Result<(), String> {
    if size > MAX_TEXT_BYTES {
        return Err(format!(
            "{size} bytes; accepted: at most {MAX_TEXT_BYTES} bytes"
        ));
    }
    Ok(())
}

/// Parses `text` as a TOML table, after checking its size and nesting.
pub fn parse_table(text: &str) -> Result<toml::Table, String> {
    check_size(text.len() as u64)?;
    check_nesting(text)?;
    text.parse()
        .map_err(|e: toml::de::Error| syntax_error(text, &e))
}

/// Refuses arrays and inline tables nested deeper than [`MAX_NESTING`], reading brackets and
/// braces outside strings (basic, literal and multi-line) and comments.
fn check_nesting(text: &str) -> Result<(), String> {
    let bytes = text.as_bytes();
    let (mut i, mut depth, mut line) = (0, 0usize, 1);
    while i < bytes.len() {
        match bytes[i] {
            b'\n' => line += 1,
            b'#' => i = skip_to(bytes, i, b"\n") - 1,
            q @ (b'"' | b'\'') => {
                let delimiter: &[u8] = if bytes[i..].starts_with(&[q, q, q]) {
                    &bytes[i..i + 3]
                } else {
                    &bytes[i..i + 1]
                };
                let end = string_end(bytes, i + delimiter.len(), delimiter);
                line += bytes[i..end].iter().filter(|&&b| b == b'\n').count();
                i = end;
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_NESTING {
                    return Err(format!(
                        "line {line}: arrays and tables nested more than {MAX_NESTING} deep; \
                         accepted: at most {MAX_NESTING} levels"
                    ));
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Ok(())
}

/// The index just past the string that starts at `from` (after its opening `delimiter`):
/// past the closing delimiter, skipping escapes in basic strings; the end of the text if the
/// string is not closed.
fn string_end(bytes: &[u8], from: usize, delimiter: &[u8]) -> usize {
    let basic = delimiter[0] == b'"';
    let mut i = from;
    while i < bytes.len() {
        if basic && bytes[i] == b'\\' {
            i += 2;
        } else if bytes[i..].starts_with(delimiter) {
            // A multi-line string may end with up to two quotes of its own before its closing
            // delimiter (`"""a""""`).
            let mut end = i + delimiter.len();
            while delimiter.len() == 3 && end < bytes.len() && bytes[end] == delimiter[0] {
                end += 1;
            }
            return end.min(i + delimiter.len() + 2);
        } else {
            i += 1;
        }
    }
    bytes.len()
}

/// The index of the next `stop` at or after `from`, or the end of the text.
fn skip_to(bytes: &[u8], from: usize, stop: &[u8]) -> usize {
    bytes[from..]
        .windows(stop.len())
        .position(|w| w == stop)
        .map_or(bytes.len(), |k| from + k)
}

/// A TOML syntax error as a line and column, the parser's message, and at most
/// 2 x [`EXCERPT_HALF_WIDTH`] characters of the line around the error.
fn syntax_error(text: &str, e: &toml::de::Error) -> String {
    let message = e
        .message()
        .trim_end()
        .lines()
        .collect::<Vec<_>>()
        .join("; ");
    let Some(at) = e.span().map(|s| s.start.min(text.len())) else {
        return format!("TOML syntax error: {message}");
    };
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
    let line_no = text[..at].matches('\n').count() + 1;
    let line = &text[line_start..line_end];
    let column = text[line_start..at].chars().count();
    let chars: Vec<char> = line.chars().collect();
    let from = column.saturating_sub(EXCERPT_HALF_WIDTH);
    let to = (column + EXCERPT_HALF_WIDTH).min(chars.len());
    let excerpt: String = chars[from..to].iter().collect();
    let lead = if from > 0 { "..." } else { "" };
    let tail = if to < chars.len() { "..." } else { "" };
    let caret = " ".repeat(lead.len() + column - from);
    format!(
        "TOML syntax error at line {line_no}, column {}: {message}\n  {lead}{excerpt}{tail}\n  {caret}^",
        column + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_cut_around_the_error() {
        let text = format!("duration = \"1s\"\nx = [{} @ ]\n", "1, ".repeat(3000));
        let e = parse_table(&text).expect_err("a syntax error");
        assert!(
            e.starts_with("TOML syntax error at line 2, column 9007"),
            "{e}"
        );
        assert!(e.len() < 400, "{} characters: {e}", e.len());
    }

    #[test]
    fn nesting_is_bounded_outside_strings_and_comments() {
        let deep = format!("x = {}{}", "[".repeat(3000), "]".repeat(3000));
        let e = parse_table(&deep).expect_err("too deep");
        assert!(
            e.contains("nested more than 32 deep") && e.len() < 200,
            "{e}"
        );
        let quoted = format!(
            "x = \"{b}\\\"\" # {b}\ny = \"\"\"a\"b{b}\"\"\"\nz = '{b}'\nw = [[1], [2]]\n\
             u = \"\"\"a\"\"\"\"\nv = \"{b}\"",
            b = "[".repeat(100)
        );
        parse_table(&quoted).expect("brackets in strings and comments do not count");
    }

    #[test]
    fn large_texts_are_refused_before_parsing() {
        let text = "[[flows]]\n".repeat(500_000);
        let e = parse_table(&text).expect_err("too large");
        assert!(e.contains("at most 4194304 bytes"), "{e}");
    }
}
