//! Time, rate and size types with explicit units, and the parsers for their text forms
//! (`"25ms"`, `"10Mbps"`, `"5MB"`). Everything in kleinrock uses these; no bare `f64` of a
//! guessed unit crosses a module boundary.

use std::fmt;
use std::ops::{Add, Sub};
use std::time::Duration;

/// A point in time: integer nanoseconds since an arbitrary epoch (the start of a simulation,
/// or the start of a process on real sockets). Only differences between instants mean anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(u64);

impl Instant {
    /// The epoch.
    pub const ZERO: Instant = Instant(0);

    /// The instant `nanos` nanoseconds after the epoch.
    pub const fn from_nanos(nanos: u64) -> Self {
        Instant(nanos)
    }

    /// Nanoseconds since the epoch.
    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Seconds since the epoch, for reports and plots.
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }

    /// Time elapsed since `earlier`, zero if `earlier` is later than `self`.
    pub fn saturating_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0 + duration_nanos(d))
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturating difference: an earlier minus a later instant is zero.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_since(earlier)
    }
}

/// A duration as whole nanoseconds, saturating at `u64::MAX` (584 years).
pub fn duration_nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A data rate. Stored as bytes per second; constructed and printed in bits per second,
/// the unit of link rates.
#[derive(Clone, Copy, Debug, Default, PartialEq, PartialOrd)]
pub struct Rate {
    bytes_per_sec: f64,
}

impl Rate {
    /// Zero bytes per second.
    pub const ZERO: Rate = Rate { bytes_per_sec: 0.0 };

    /// A rate of `bps` bits per second.
    pub fn from_bits_per_sec(bps: f64) -> Self {
        Rate {
            bytes_per_sec: bps / 8.0,
        }
    }

    /// A rate of `bytes` bytes per second.
    pub fn from_bytes_per_sec(bytes: f64) -> Self {
        Rate {
            bytes_per_sec: bytes,
        }
    }

    /// The rate that moves `bytes` in `interval`; zero for an empty interval.
    pub fn from_bytes_over(bytes: u64, interval: Duration) -> Self {
        let secs = interval.as_secs_f64();
        if secs <= 0.0 {
            return Rate::ZERO;
        }
        Rate::from_bytes_per_sec(bytes as f64 / secs)
    }

    /// Bits per second.
    pub fn bits_per_sec(self) -> f64 {
        self.bytes_per_sec * 8.0
    }

    /// Bytes per second.
    pub fn bytes_per_sec(self) -> f64 {
        self.bytes_per_sec
    }

    /// Bytes this rate moves in `d` (the bandwidth-delay product for a round-trip time `d`).
    pub fn bytes_in(self, d: Duration) -> f64 {
        self.bytes_per_sec * d.as_secs_f64()
    }

    /// Time to move `bytes` at this rate; `None` for a zero rate.
    pub fn time_for(self, bytes: u64) -> Option<Duration> {
        if self.bytes_per_sec <= 0.0 {
            return None;
        }
        Some(Duration::from_nanos(
            (bytes as f64 * 1e9 / self.bytes_per_sec).round() as u64,
        ))
    }

    /// This rate scaled by `factor`.
    pub fn scaled(self, factor: f64) -> Rate {
        Rate::from_bytes_per_sec(self.bytes_per_sec * factor)
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let bps = self.bits_per_sec();
        if bps >= 1e9 {
            write!(f, "{:.3}Gbps", bps / 1e9)
        } else if bps >= 1e6 {
            write!(f, "{:.3}Mbps", bps / 1e6)
        } else if bps >= 1e3 {
            write!(f, "{:.3}kbps", bps / 1e3)
        } else {
            write!(f, "{bps:.0}bps")
        }
    }
}

/// Splits `"12.5ms"` into `(12.5, "ms")`.
fn split_number(text: &str) -> Option<(f64, &str)> {
    let text = text.trim();
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == 'e'))
        .unwrap_or(text.len());
    let end = if end > 0 && text[..end].ends_with('e') {
        end - 1
    } else {
        end
    };
    let value: f64 = text[..end].parse().ok()?;
    Some((value, text[end..].trim()))
}

/// Parses a non-negative duration: `"25ms"`, `"1.5s"`, `"200us"`, `"10ns"`, `"2min"`.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let accepted = "a number with a unit: ns, us, ms, s or min (e.g. \"25ms\")";
    let (value, unit) = split_number(text).ok_or_else(|| format!("`{text}` is not {accepted}"))?;
    let scale = match unit {
        "ns" => 1e-9,
        "us" | "µs" => 1e-6,
        "ms" => 1e-3,
        "s" => 1.0,
        "min" => 60.0,
        _ => return Err(format!("`{text}` has no known unit; expected {accepted}")),
    };
    if !value.is_finite() || value < 0.0 {
        return Err(format!("`{text}` must be zero or positive"));
    }
    Ok(Duration::from_nanos((value * scale * 1e9).round() as u64))
}

/// Parses a positive rate: `"10Mbps"`, `"128kbps"`, `"1Gbps"`, `"500bps"`.
pub fn parse_rate(text: &str) -> Result<Rate, String> {
    let accepted = "a positive number with a unit: bps, kbps, Mbps or Gbps (e.g. \"10Mbps\")";
    let (value, unit) = split_number(text).ok_or_else(|| format!("`{text}` is not {accepted}"))?;
    let scale = match unit {
        "bps" => 1.0,
        "kbps" | "Kbps" => 1e3,
        "Mbps" => 1e6,
        "Gbps" => 1e9,
        _ => return Err(format!("`{text}` has no known unit; expected {accepted}")),
    };
    if !value.is_finite() || value <= 0.0 {
        return Err(format!("`{text}` must be positive"));
    }
    Ok(Rate::from_bits_per_sec(value * scale))
}

/// Parses a positive byte count: `"5MB"` (10^6), `"64KB"`, `"1500B"`, `"2MiB"`, `"1GB"`.
pub fn parse_bytes(text: &str) -> Result<u64, String> {
    let accepted = "a positive number with a unit: B, KB, MB, GB, KiB, MiB or GiB (e.g. \"5MB\")";
    let (value, unit) = split_number(text).ok_or_else(|| format!("`{text}` is not {accepted}"))?;
    let scale = match unit {
        "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("`{text}` has no known unit; expected {accepted}")),
    };
    if !value.is_finite() || value <= 0.0 {
        return Err(format!("`{text}` must be positive"));
    }
    Ok((value * scale).round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("25ms").unwrap(), Duration::from_millis(25));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_rate("10Mbps").unwrap().bits_per_sec(), 10e6);
        assert_eq!(parse_bytes("5MB").unwrap(), 5_000_000);
        assert!(parse_rate("-10Mbps").is_err());
        assert!(parse_rate("10").is_err());
        assert!(parse_duration("5 parsecs").is_err());
    }

    #[test]
    fn rate_arithmetic() {
        let r = Rate::from_bits_per_sec(10e6);
        assert_eq!(r.time_for(1250), Some(Duration::from_millis(1)));
        assert!((r.bytes_in(Duration::from_millis(50)) - 62_500.0).abs() < 1e-6);
    }
}
