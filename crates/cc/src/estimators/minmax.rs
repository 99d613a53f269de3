//! Windowed running maximum and minimum: Kathleen Nichols' 3-sample filter, behaving as Linux
//! `lib/win_minmax.c` does.
//!
//! This module owns [`WindowedMax`] and [`WindowedMin`]. The filter keeps the best, 2nd best and
//! 3rd best samples of the window, each with the time it was taken, such that the n-th best is
//! never older than the (n-1)-th. A new best replaces all three; when the best ages out of the
//! window the 2nd and 3rd move up. It approximates an exact sliding-window extremum (it can hold
//! a sample slightly longer) in constant space and time, which is what BBR's bandwidth filter
//! relies on.
//!
//! Time is a bare `u64` whose unit the caller chooses (a round count for BBR's bandwidth filter,
//! nanoseconds for a wall-clock window); the window is in the same unit. Times must not go
//! backwards; an earlier time is treated as no time elapsed.

use std::marker::PhantomData;

/// One filter sample: a value and the time it was taken.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Sample<T> {
    time: u64,
    value: T,
}

/// Which of two values a filter prefers.
trait Prefer {
    /// Whether `new` is at least as good as `old` (ties count: a fresher equal sample wins).
    fn at_least_as_good<T: PartialOrd>(new: T, old: T) -> bool;
}

/// Prefers larger values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Larger;

impl Prefer for Larger {
    fn at_least_as_good<T: PartialOrd>(new: T, old: T) -> bool {
        new >= old
    }
}

/// Prefers smaller values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Smaller;

impl Prefer for Smaller {
    fn at_least_as_good<T: PartialOrd>(new: T, old: T) -> bool {
        new <= old
    }
}

/// The shared 3-sample filter, parametrised by the preference `P`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Filter<T, P> {
    window: u64,
    /// Best, 2nd best, 3rd best; `None` before the first sample.
    samples: Option<[Sample<T>; 3]>,
    prefer: PhantomData<P>,
}

impl<T: Copy + PartialOrd, P: Prefer> Filter<T, P> {
    fn new(window: u64) -> Self {
        Filter {
            window,
            samples: None,
            prefer: PhantomData,
        }
    }

    fn get(&self) -> Option<T> {
        self.samples.map(|s| s[0].value)
    }

    /// Forgets all samples and starts over from `(time, value)` (win_minmax.c `minmax_reset`).
    fn reset(&mut self, time: u64, value: T) -> T {
        let sample = Sample { time, value };
        self.samples = Some([sample; 3]);
        value
    }

    /// win_minmax.c `minmax_running_max` / `minmax_running_min`, in its four steps.
    fn update(&mut self, time: u64, value: T) -> T {
        let new = Sample { time, value };
        let Some(mut s) = self.samples else {
            return self.reset(time, value);
        };
        // Step 1: a new best, or nothing left in the window, restarts the filter.
        if P::at_least_as_good(value, s[0].value) || time.saturating_sub(s[2].time) > self.window {
            return self.reset(time, value);
        }
        // Step 2: the new sample displaces the 2nd (and with it the 3rd) or only the 3rd.
        if P::at_least_as_good(value, s[1].value) {
            s[1] = new;
            s[2] = new;
        } else if P::at_least_as_good(value, s[2].value) {
            s[2] = new;
        }
        // Step 3: sub-window aging (win_minmax.c `minmax_subwin_update`).
        let window = self.window;
        let dt = time.saturating_sub(s[0].time);
        if dt > window {
            // The best expired: the 2nd and 3rd move up, the new sample becomes the 3rd.
            s = [s[1], s[2], new];
            if time.saturating_sub(s[0].time) > window {
                // The old 2nd expired as well: move up once more.
                s = [s[1], s[2], new];
            }
        } else if s[1].time == s[0].time && dt > window / 4 {
            // A quarter of the window passed without a distinct 2nd best: take one now.
            s[1] = new;
            s[2] = new;
        } else if s[2].time == s[1].time && dt > window / 2 {
            // Half of the window passed without a distinct 3rd best: take one now.
            s[2] = new;
        }
        self.samples = Some(s);
        // Step 4: the output is the best.
        s[0].value
    }
}

/// Running maximum over a time window (Nichols' 3-sample filter, Linux `minmax_running_max`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowedMax<T> {
    inner: Filter<T, Larger>,
}

/// Running minimum over a time window (Nichols' 3-sample filter, Linux `minmax_running_min`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct WindowedMin<T> {
    inner: Filter<T, Smaller>,
}

macro_rules! windowed_filter_api {
    ($name:ident, $what:literal) => {
        impl<T: Copy + PartialOrd> $name<T> {
            #[doc = concat!("An empty filter keeping the ", $what, " over `window` time units.")]
            pub fn new(window: u64) -> Self {
                $name {
                    inner: Filter::new(window),
                }
            }

            #[doc = concat!("Adds the sample `value` taken at `time`; returns the current ", $what, ".")]
            pub fn update(&mut self, time: u64, value: T) -> T {
                self.inner.update(time, value)
            }

            #[doc = concat!("The current ", $what, ", `None` before the first sample.")]
            pub fn get(&self) -> Option<T> {
                self.inner.get()
            }

            /// Forgets every sample and restarts the filter from `value` taken at `time`.
            pub fn reset(&mut self, time: u64, value: T) {
                self.inner.reset(time, value);
            }

            /// The window length, in the caller's time unit.
            pub fn window(&self) -> u64 {
                self.inner.window
            }

            /// Changes the window length; the samples held are kept and age against it.
            pub fn set_window(&mut self, window: u64) {
                self.inner.window = window;
            }
        }
    };
}

windowed_filter_api!(WindowedMax, "maximum");
windowed_filter_api!(WindowedMin, "minimum");

#[cfg(test)]
mod tests {
    use super::*;

    /// The (time, value) triple the filter holds, best first.
    fn held<T: Copy + PartialOrd, P: Prefer>(f: &Filter<T, P>) -> [(u64, T); 3] {
        let s = f.samples.expect("filter has samples");
        [
            (s[0].time, s[0].value),
            (s[1].time, s[1].value),
            (s[2].time, s[2].value),
        ]
    }

    #[test]
    fn empty_filter_has_no_value_and_first_sample_fills_all_three() {
        let mut f = WindowedMax::<u64>::new(10);
        assert_eq!(f.get(), None);
        assert_eq!(f.update(5, 42), 42);
        assert_eq!(f.get(), Some(42));
        assert_eq!(held(&f.inner), [(5, 42); 3]);
    }

    #[test]
    fn max_keeps_peak_for_the_window_then_expires() {
        // win_minmax.c: the best is replaced once `t - best.t > win`, so a peak taken at t = 0
        // is still reported at t = win and gone at t = win + 1.
        let mut f = WindowedMax::new(10);
        f.update(0, 100u64);
        for t in 1..=10 {
            assert_eq!(f.update(t, 50), 100, "peak must be held at t = {t}");
        }
        assert_eq!(f.update(11, 50), 50, "peak must expire after the window");
        assert_eq!(f.get(), Some(50));
    }

    #[test]
    fn new_best_resets_all_three_samples() {
        let mut f = WindowedMax::new(8);
        f.update(0, 100u64);
        f.update(3, 80);
        f.update(5, 60);
        assert_eq!(f.update(6, 100), 100, "an equal value is a new best (>=)");
        assert_eq!(held(&f.inner), [(6, 100); 3]);
    }

    #[test]
    fn second_and_third_best_age_as_sub_windows() {
        // Window 8: a distinct 2nd best is taken after win/4 = 2, a distinct 3rd after win/2 = 4.
        let mut f = WindowedMax::new(8);
        f.update(0, 100u64);
        // Within the first quarter a lower sample is not kept.
        assert_eq!(f.update(2, 90), 100);
        assert_eq!(held(&f.inner), [(0, 100); 3]);
        // After a quarter window (dt = 3 > 2) it becomes 2nd and 3rd best.
        assert_eq!(f.update(3, 80), 100);
        assert_eq!(held(&f.inner), [(0, 100), (3, 80), (3, 80)]);
        // Below the 3rd and within half a window: ignored.
        assert_eq!(f.update(4, 70), 100);
        assert_eq!(held(&f.inner), [(0, 100), (3, 80), (3, 80)]);
        // After half a window (dt = 5 > 4) the 3rd best is refreshed.
        assert_eq!(f.update(5, 60), 100);
        assert_eq!(held(&f.inner), [(0, 100), (3, 80), (5, 60)]);
        // The best expires (dt = 9 > 8): the 2nd moves up and is reported.
        assert_eq!(f.update(9, 50), 80);
        assert_eq!(held(&f.inner), [(3, 80), (5, 60), (9, 50)]);
        // Then the old 3rd moves up.
        assert_eq!(f.update(12, 40), 60);
        assert_eq!(held(&f.inner), [(5, 60), (9, 50), (12, 40)]);
    }

    #[test]
    fn expired_second_best_shifts_twice() {
        let mut f = WindowedMax::new(8);
        f.update(0, 100u64);
        f.update(3, 80);
        f.update(5, 60);
        // t = 12: best (0) and 2nd (3) are both older than the window, the 3rd (5) is not.
        assert_eq!(f.update(12, 50), 60);
        assert_eq!(held(&f.inner), [(5, 60), (12, 50), (12, 50)]);
    }

    #[test]
    fn sample_above_second_replaces_second_and_third() {
        let mut f = WindowedMax::new(8);
        f.update(0, 100u64);
        f.update(3, 80);
        f.update(5, 60);
        assert_eq!(f.update(6, 90), 100);
        assert_eq!(held(&f.inner), [(0, 100), (6, 90), (6, 90)]);
        assert_eq!(f.update(7, 70), 100);
        assert_eq!(held(&f.inner), [(0, 100), (6, 90), (7, 70)]);
    }

    #[test]
    fn nothing_left_in_window_restarts() {
        let mut f = WindowedMax::new(8);
        f.update(0, 100u64);
        f.update(3, 80);
        f.update(5, 60);
        // t - 3rd.t = 9 > 8: every sample is stale, even a small new one becomes the best.
        assert_eq!(f.update(14, 1), 1);
        assert_eq!(held(&f.inner), [(14, 1); 3]);
    }

    #[test]
    fn min_filter_is_symmetric() {
        let mut f = WindowedMin::new(8);
        assert_eq!(f.get(), None);
        f.update(0, 10u64);
        assert_eq!(f.update(1, 20), 10);
        assert_eq!(f.update(3, 30), 10);
        assert_eq!(f.update(5, 40), 10);
        assert_eq!(held(&f.inner), [(0, 10), (3, 30), (5, 40)]);
        assert_eq!(f.update(9, 50), 30);
        assert_eq!(f.update(12, 60), 40);
        assert_eq!(f.update(13, 5), 5, "a smaller value is a new best");
        assert_eq!(held(&f.inner), [(13, 5); 3]);
    }

    #[test]
    fn min_filter_keeps_minimum_for_window_in_nanoseconds() {
        // As a min-RTT filter over 10 s with nanosecond time stamps.
        let s = 1_000_000_000u64;
        let mut f = WindowedMin::new(10 * s);
        f.update(0, 50_000_000u64);
        assert_eq!(f.update(10 * s, 80_000_000), 50_000_000);
        assert_eq!(f.update(10 * s + 1, 80_000_000), 80_000_000);
    }

    #[test]
    fn reset_and_set_window() {
        let mut f = WindowedMax::new(8);
        assert_eq!(f.window(), 8);
        f.update(0, 100u64);
        f.reset(1, 7);
        assert_eq!(f.get(), Some(7));
        assert_eq!(f.update(2, 6), 7);
        f.set_window(2);
        assert_eq!(f.window(), 2);
        // With the shorter window the best taken at t = 1 has expired at t = 4.
        assert_eq!(f.update(4, 5), 5);
    }

    #[test]
    fn works_with_floating_point_values() {
        let mut f = WindowedMax::new(3);
        f.update(0, 1.5f64);
        assert_eq!(f.update(1, 0.5), 1.5);
        assert_eq!(f.update(5, 0.25), 0.25);
    }
}
