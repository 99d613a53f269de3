//! Traces: per-flow and per-link time series sampled at a fixed interval into columnar
//! buffers, written as CSV on request.

use kleinrock_cc::ControllerState;
use std::io::{self, Write};

/// A named column of numbers.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Column {
    /// Name, with its unit (`cwnd_bytes`, `srtt_ms`).
    pub name: String,
    /// One value per sample; NaN where the value did not exist at that time.
    pub values: Vec<f64>,
}

/// A table of samples: a time column, a text mode column and numeric columns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Series {
    /// Name of the flow or link.
    pub name: String,
    /// Sample times, seconds.
    pub time_s: Vec<f64>,
    /// Controller mode per sample (flows only; empty for links).
    pub mode: Vec<&'static str>,
    /// Numeric columns, in first-seen order.
    pub columns: Vec<Column>,
}

impl Series {
    /// An empty series called `name`.
    pub fn new(name: &str) -> Self {
        Series {
            name: name.to_string(),
            ..Series::default()
        }
    }

    /// Starts a new sample at `time_s`.
    pub fn begin(&mut self, time_s: f64) {
        self.time_s.push(time_s);
    }

    /// Sets `name` for the current sample, creating the column (NaN-padded) if it is new.
    pub fn set(&mut self, name: &str, value: f64) {
        let rows = self.time_s.len();
        let col = match self.columns.iter().position(|c| c.name == name) {
            Some(i) => &mut self.columns[i],
            None => {
                self.columns.push(Column {
                    name: name.to_string(),
                    values: vec![f64::NAN; rows.saturating_sub(1)],
                });
                self.columns.last_mut().expect("just pushed")
            }
        };
        col.values.resize(rows - 1, f64::NAN);
        col.values.push(value);
    }

    /// Records a controller's state for the current sample.
    pub fn set_state(&mut self, state: &ControllerState) {
        self.mode.push(state.mode);
        for &(name, value) in &state.values {
            self.set(name, value);
        }
    }

    /// Pads every column to the current number of samples.
    pub fn end(&mut self) {
        let rows = self.time_s.len();
        for c in &mut self.columns {
            c.values.resize(rows, f64::NAN);
        }
    }

    /// Values of column `name`.
    pub fn column(&self, name: &str) -> Option<&[f64]> {
        self.columns
            .iter()
            .find(|c| c.name == name)
            .map(|c| c.values.as_slice())
    }

    /// Writes the series as CSV with a header row; NaN is written as an empty cell.
    pub fn write_csv<W: Write>(&self, mut w: W) -> io::Result<()> {
        write!(w, "time_s")?;
        if !self.mode.is_empty() {
            write!(w, ",mode")?;
        }
        for c in &self.columns {
            write!(w, ",{}", c.name)?;
        }
        writeln!(w)?;
        for (i, t) in self.time_s.iter().enumerate() {
            write!(w, "{t:.6}")?;
            if let Some(m) = self.mode.get(i) {
                write!(w, ",{m}")?;
            }
            for c in &self.columns {
                match c.values.get(i) {
                    Some(v) if v.is_finite() => write!(w, ",{v}")?,
                    _ => write!(w, ",")?,
                }
            }
            writeln!(w)?;
        }
        Ok(())
    }
}

/// All traces of a run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// One series per flow.
    pub flows: Vec<Series>,
    /// One series per link.
    pub links: Vec<Series>,
    /// Per tunnel: one series for the tunnel, then one per path (its forward subflow).
    pub tunnels: Vec<Vec<Series>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn late_columns_are_padded() {
        let mut s = Series::new("f");
        s.begin(0.0);
        s.set("a", 1.0);
        s.end();
        s.begin(0.1);
        s.set("a", 2.0);
        s.set("b", 3.0);
        s.end();
        let mut out = Vec::new();
        s.write_csv(&mut out).unwrap();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "time_s,a,b\n0.000000,1,\n0.100000,2,3\n"
        );
    }
}
