//! The mean of a metric over replicate runs with its 95 % confidence interval, from Student's t
//! distribution with n - 1 degrees of freedom:
//!
//! mean ± t(0.975, n - 1) · s / √n, where s is the sample standard deviation (n - 1 in its
//! denominator). The quantile t(0.975, ν) is found by bisection on the exact distribution
//! function of t for whole ν, Abramowitz and Stegun, Handbook of Mathematical Functions
//! (1964), 26.7.3 (ν odd) and 26.7.4 (ν even).

use serde::Serialize;
use std::f64::consts::PI;

/// A metric over n runs: its mean and, for n of at least 2, its spread and the 95 %
/// confidence interval of the mean.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Stat {
    /// Mean of the n values.
    pub mean: f64,
    /// Sample standard deviation (n - 1 in the denominator); `None` for n = 1.
    pub std: Option<f64>,
    /// Lower end of the 95 % confidence interval of the mean; `None` for n = 1.
    pub ci95_low: Option<f64>,
    /// Upper end; `None` for n = 1.
    pub ci95_high: Option<f64>,
    /// Number of values (runs that had the metric).
    pub n: usize,
}

impl Stat {
    /// The statistics of `values`; `None` when there are none.
    pub fn of(values: &[f64]) -> Option<Stat> {
        let n = values.len();
        if n == 0 {
            return None;
        }
        let mean = values.iter().sum::<f64>() / n as f64;
        let mut stat = Stat {
            mean,
            std: None,
            ci95_low: None,
            ci95_high: None,
            n,
        };
        if n >= 2 {
            let squares: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
            let std = (squares / (n - 1) as f64).sqrt();
            let half = t_975((n - 1) as u64) * std / (n as f64).sqrt();
            stat.std = Some(std);
            stat.ci95_low = Some(mean - half);
            stat.ci95_high = Some(mean + half);
        }
        Some(stat)
    }

    /// Half the width of the confidence interval; `None` for n = 1.
    pub fn half_width(&self) -> Option<f64> {
        Some((self.ci95_high? - self.ci95_low?) / 2.0)
    }
}

/// A(t | ν) = P(|T| ≤ t) for Student's t with `nu` ≥ 1 degrees of freedom, A&S 26.7.3/26.7.4
/// with θ = atan(t / √ν).
pub fn two_sided_probability(t: f64, nu: u64) -> f64 {
    let theta = (t / (nu as f64).sqrt()).atan();
    let (sin, cos) = theta.sin_cos();
    let cos2 = cos * cos;
    if nu % 2 == 1 {
        // 26.7.3: (2/π)(θ + sin θ (cos θ + 2/3 cos³θ + ... + (2·4···(ν-3))/(1·3···(ν-2)) cos^(ν-2) θ))
        let (mut term, mut sum) = (cos, 0.0);
        for k in 1..=(nu - 1) / 2 {
            sum += term;
            term *= cos2 * (2 * k) as f64 / (2 * k + 1) as f64;
        }
        2.0 / PI * (theta + sin * sum)
    } else {
        // 26.7.4: sin θ (1 + 1/2 cos²θ + ... + (1·3···(ν-3))/(2·4···(ν-2)) cos^(ν-2) θ)
        let (mut term, mut sum) = (1.0, 0.0);
        for k in 1..=nu / 2 {
            sum += term;
            term *= cos2 * (2 * k - 1) as f64 / (2 * k) as f64;
        }
        sin * sum
    }
}

/// t(0.975, ν): the t with A(t | ν) = 0.95, so that mean ± t·s/√n covers 95 % (ν ≥ 1).
pub fn t_975(nu: u64) -> f64 {
    // A(t | ν) grows with t; t(0.975, 1) = tan(0.475π) = 12.706 is the largest.
    let (mut low, mut high) = (0.0, 16.0);
    for _ in 0..64 {
        let mid = (low + high) / 2.0;
        if two_sided_probability(mid, nu) < 0.95 {
            low = mid;
        } else {
            high = mid;
        }
    }
    (low + high) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_match_printed_tables() {
        // Two-sided 95 % points of t, e.g. NIST/SEMATECH e-Handbook 1.3.6.7.2; ν = 1 and 2
        // in closed form: tan(0.475π) and √(2·0.95²/(1-0.95²)).
        let printed = [
            (1, 12.706),
            (2, 4.303),
            (3, 3.182),
            (4, 2.776),
            (9, 2.262),
            (29, 2.045),
            (100, 1.984),
        ];
        for (nu, t) in printed {
            assert!((t_975(nu) - t).abs() < 5e-4, "ν = {nu}: {}", t_975(nu));
        }
        assert!((t_975(1) - (0.475 * PI).tan()).abs() < 1e-9);
        assert!((t_975(2) - (2.0 * 0.9025f64 / 0.0975).sqrt()).abs() < 1e-9);
    }
}
