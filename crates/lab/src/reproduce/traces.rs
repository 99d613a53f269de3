//! Reading figures off traces: mode changes, values at a time, rates over a window.

use kleinrock_sim::trace::Series;

/// The values of column `name`, or an error naming it.
pub fn column<'a>(s: &'a Series, name: &str) -> Result<&'a [f64], String> {
    s.column(name)
        .ok_or_else(|| format!("trace of `{}` has no column `{name}`", s.name))
}

/// Index of the first sample at or after `t` seconds.
pub fn index_at(s: &Series, t: f64) -> usize {
    s.time_s.partition_point(|&x| x < t)
}

/// Cumulative bytes of a trace column at time `t` (s): the last sample at or before `t`,
/// zero before the first sample (or where the column has no value).
pub fn bytes_at(s: &Series, bytes: &[f64], t: f64) -> f64 {
    let i = index_at(s, t + 1e-9);
    (0..i.min(bytes.len()))
        .rev()
        .map(|k| bytes[k])
        .find(|v| !v.is_nan())
        .unwrap_or(0.0)
}

/// Growth of a cumulative byte column between `a` and `b` seconds, in bits per second.
pub fn rate_between(s: &Series, bytes: &[f64], a: f64, b: f64) -> f64 {
    (bytes_at(s, bytes, b) - bytes_at(s, bytes, a)) * 8.0 / (b - a)
}

/// Index of the first sample from `from` on whose mode is not `mode`.
pub fn first_not_in_mode(s: &Series, from: usize, mode: &str) -> Option<usize> {
    (from..s.mode.len()).find(|&i| s.mode[i] != mode)
}

/// Times (s) at which the series enters `mode` (a sample in `mode` after one that is not).
pub fn entries(s: &Series, mode: &str) -> Vec<f64> {
    (1..s.mode.len())
        .filter(|&i| s.mode[i] == mode && s.mode[i - 1] != mode)
        .map(|i| s.time_s[i])
        .collect()
}

/// Rate of growth of a cumulative byte column over the `window` seconds ending at sample
/// `i`, in bits per second.
pub fn rate_bps(s: &Series, bytes: &[f64], i: usize, window: f64) -> f64 {
    let j = index_at(s, s.time_s[i] - window);
    let dt = s.time_s[i] - s.time_s[j];
    if dt <= 0.0 {
        0.0
    } else {
        (bytes[i] - bytes[j]) * 8.0 / dt
    }
}

/// The series as CSV text.
pub fn csv(s: &Series) -> String {
    let mut out = Vec::new();
    s.write_csv(&mut out).expect("writing to memory");
    String::from_utf8(out).expect("CSV is UTF-8")
}
