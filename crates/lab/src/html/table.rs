//! Reading our own trace CSV files back: a header row, then one row per sample; empty cells
//! are missing values (NaN), and the `mode` column and the first column are kept as text too.

use std::path::Path;

/// A trace file's columns.
#[derive(Debug, Default)]
pub struct Columns {
    /// Column names, in file order.
    pub names: Vec<String>,
    /// Numeric columns (NaN where empty or text), in file order.
    pub values: Vec<Vec<f64>>,
    /// The `mode` column, if there is one.
    pub mode: Vec<String>,
    /// The first column's cells as text (a reproduction's tables name their rows there).
    pub first: Vec<String>,
}

impl Columns {
    /// The column called `name`.
    pub fn get(&self, name: &str) -> Option<&[f64]> {
        let i = self.names.iter().position(|n| n == name)?;
        Some(&self.values[i])
    }

    /// The sample times, s.
    pub fn time(&self) -> &[f64] {
        self.get("time_s").unwrap_or(&[])
    }
}

/// Reads the CSV file at `path`; the error names the file and the line.
pub fn read(path: &Path) -> Result<Columns, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse(&text).map_err(|m| format!("{}: {m}", path.display()))
}

/// Parses CSV text as [`read`] does.
pub fn parse(text: &str) -> Result<Columns, String> {
    let mut lines = text.lines();
    let header = lines.next().ok_or("empty file")?;
    let names: Vec<String> = header.split(',').map(str::to_string).collect();
    let mode_at = names.iter().position(|n| n == "mode");
    let mut c = Columns {
        values: vec![Vec::new(); names.len()],
        names,
        mode: Vec::new(),
        first: Vec::new(),
    };
    for (k, line) in lines.enumerate() {
        let mut cells = 0;
        for (i, cell) in line.split(',').enumerate() {
            cells += 1;
            if Some(i) == mode_at {
                c.mode.push(cell.to_string());
            }
            if i == 0 {
                c.first.push(cell.to_string());
            }
            let v = match cell {
                "" => f64::NAN,
                _ => cell.parse().unwrap_or(f64::NAN),
            };
            if let Some(col) = c.values.get_mut(i) {
                col.push(v);
            }
        }
        if cells != c.names.len() {
            return Err(format!(
                "line {}: {cells} cells, the header has {}",
                k + 2,
                c.names.len()
            ));
        }
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_cells_are_missing_and_mode_is_text() {
        let c = parse("time_s,mode,a\n0.0,startup,1\n0.1,drain,\n").unwrap();
        assert_eq!(c.time(), &[0.0, 0.1]);
        assert_eq!(c.mode, vec!["startup", "drain"]);
        assert_eq!(c.first, vec!["0.0", "0.1"]);
        let a = c.get("a").unwrap();
        assert_eq!(a[0], 1.0);
        assert!(a[1].is_nan());
        assert!(parse("time_s,a\n0,1,2\n").is_err());
    }
}
