//! Where a time goes across the drawing. A watch that ran for days is quiet most of the time:
//! drawn linearly, its minutes of maintenance would be a pixel wide. So a quiet stretch (nothing
//! drawn begins or ends in it: no notification, window end, DNS change, close, or connection
//! opened or closed) longer than [`QUIET_MIN`] and a tenth of the span becomes a break of fixed
//! width, and the width it gives up goes to the active stretches, each drawn linearly. A run of
//! a scenario (seconds to a minute) never has such a stretch, so its drawing stays linear.

/// The shortest quiet stretch drawn as a break.
pub const QUIET_MIN: f64 = 600.0;
/// The width of a break, in the drawing's units.
pub const BREAK_WIDTH: f64 = 36.0;
/// At most this many breaks (the longest stretches): the drawing's width is finite.
const MAX_BREAKS: usize = 12;

/// A stretch of time and the x range it is drawn over.
#[derive(Debug, Clone, Copy)]
struct Segment {
    t0: f64,
    t1: f64,
    x0: f64,
    x1: f64,
    quiet: bool,
}

/// Maps times to x, linearly within each stretch.
#[derive(Debug)]
pub struct Scale {
    segments: Vec<Segment>,
}

impl Scale {
    /// The scale from `t0` to `t1` drawn over `x0..x1`, with breaks for the quiet stretches
    /// between the `times` at which something drawn begins or ends.
    pub fn new(t0: f64, t1: f64, x0: f64, x1: f64, mut times: Vec<f64>) -> Scale {
        times.retain(|t| t.is_finite());
        times.extend([t0, t1]);
        times.sort_by(f64::total_cmp);
        let gaps = quiet_gaps(&times, t1 - t0);
        let quiet_width = BREAK_WIDTH * gaps.len() as f64;
        let active = active_stretches(t0, t1, &gaps);
        let total: f64 = active.iter().map(|(a, b)| b - a).sum();
        // Each active stretch gets a little width of its own, so a lone event between two breaks
        // is not drawn on top of them.
        let pad = (total * 0.02).max(1e-9);
        let share = (x1 - x0 - quiet_width) / (total + pad * active.len() as f64);
        let mut segments = Vec::with_capacity(active.len() + gaps.len());
        let mut x = x0;
        for (i, &(a, b)) in active.iter().enumerate() {
            let w = (b - a + pad) * share;
            segments.push(segment(a, b, x, x + w, false));
            x += w;
            if let Some(&(ga, gb)) = gaps.get(i) {
                segments.push(segment(ga, gb, x, x + BREAK_WIDTH, true));
                x += BREAK_WIDTH;
            }
        }
        Scale { segments }
    }

    pub fn x(&self, t: f64) -> f64 {
        let i = self
            .segments
            .partition_point(|s| s.t1 < t)
            .min(self.segments.len() - 1);
        let s = &self.segments[i];
        let f = if s.t1 > s.t0 {
            ((t - s.t0) / (s.t1 - s.t0)).clamp(0.0, 1.0)
        } else {
            0.5
        };
        s.x0 + f * (s.x1 - s.x0)
    }

    /// The quiet stretches drawn as breaks: `(from, to, x0, x1)`.
    pub fn breaks(&self) -> impl Iterator<Item = (f64, f64, f64, f64)> + '_ {
        self.segments
            .iter()
            .filter(|s| s.quiet)
            .map(|s| (s.t0, s.t1, s.x0, s.x1))
    }

    /// The active stretches: `(from, to, x0, x1)`, for the axis's ticks.
    pub fn stretches(&self) -> impl Iterator<Item = (f64, f64, f64, f64)> + '_ {
        self.segments
            .iter()
            .filter(|s| !s.quiet)
            .map(|s| (s.t0, s.t1, s.x0, s.x1))
    }
}

fn segment(t0: f64, t1: f64, x0: f64, x1: f64, quiet: bool) -> Segment {
    Segment {
        t0,
        t1,
        x0,
        x1,
        quiet,
    }
}

/// The longest gaps between consecutive `times` (sorted) that are quiet enough to break, in time
/// order.
fn quiet_gaps(times: &[f64], span: f64) -> Vec<(f64, f64)> {
    let min = QUIET_MIN.max(span / 10.0);
    let mut gaps: Vec<(f64, f64)> = times
        .windows(2)
        .filter(|w| w[1] - w[0] > min)
        .map(|w| (w[0], w[1]))
        .collect();
    gaps.sort_by(|a, b| (b.1 - b.0).total_cmp(&(a.1 - a.0)));
    gaps.truncate(MAX_BREAKS);
    gaps.sort_by(|a, b| a.0.total_cmp(&b.0));
    gaps
}

/// What lies between the gaps: one more stretch than there are gaps.
fn active_stretches(t0: f64, t1: f64, gaps: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(gaps.len() + 1);
    let mut from = t0;
    for &(a, b) in gaps {
        out.push((from, a));
        from = b;
    }
    out.push((from, t1));
    out
}

/// A quiet stretch's length as a break's label says it: `40 min`, `5 h`, `3 d`.
pub fn short_duration(secs: f64) -> String {
    match secs {
        s if s >= 2.0 * 86_400.0 => format!("{:.0} d", s / 86_400.0),
        s if s >= 2.0 * 3_600.0 => format!("{:.0} h", s / 3_600.0),
        s => format!("{:.0} min", s / 60.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenario_run_is_drawn_linearly() {
        let s = Scale::new(-1.0, 18.0, 0.0, 190.0, vec![0.0, 9.7, 15.0, 16.6]);
        assert_eq!(s.breaks().count(), 0);
        let (a, b) = (s.x(0.0), s.x(9.5));
        assert!((b - a - 95.0).abs() < 3.0, "{a} {b}");
    }

    #[test]
    fn a_quiet_day_is_one_break_and_both_maintenances_stay_wide() {
        let day = 86_400.0;
        let times = vec![0.0, 5.0, 20.0, day, day + 5.0, day + 20.0];
        let s = Scale::new(0.0, day + 20.0, 0.0, 1000.0, times);
        let breaks: Vec<_> = s.breaks().collect();
        assert_eq!(breaks.len(), 1, "{s:?}");
        assert_eq!((breaks[0].0, breaks[0].1), (20.0, day));
        assert!((breaks[0].3 - breaks[0].2 - BREAK_WIDTH).abs() < 1e-9);
        // Each 20 s maintenance gets about half of what is left, not a pixel.
        assert!(s.x(20.0) - s.x(0.0) > 400.0, "{s:?}");
        assert!(s.x(day + 20.0) - s.x(day) > 400.0, "{s:?}");
        // A time inside the break is drawn inside it, in order.
        assert!(s.x(day / 2.0) > s.x(20.0) && s.x(day / 2.0) < s.x(day));
        assert!((s.x(day + 20.0) - 1000.0).abs() < 1e-6);
    }

    #[test]
    fn breaks_are_bounded_in_number() {
        let times: Vec<f64> = (0..1000).map(|i| f64::from(i) * 3_600.0).collect();
        let s = Scale::new(0.0, 999.0 * 3_600.0, 0.0, 1000.0, times);
        // Hourly events over 41 days: no gap is a tenth of the span, so nothing breaks.
        assert_eq!(s.breaks().count(), 0);
        let mut times: Vec<f64> = (0..100).map(|i| f64::from(i) * 86_400.0).collect();
        times.push(100.0 * 86_400.0 * 20.0);
        let s = Scale::new(0.0, 2_000.0 * 86_400.0, 0.0, 1000.0, times);
        assert!(s.breaks().count() <= MAX_BREAKS);
    }

    #[test]
    fn durations_read_short() {
        assert_eq!(short_duration(2_400.0), "40 min");
        assert_eq!(short_duration(5.0 * 3_600.0), "5 h");
        assert_eq!(short_duration(3.0 * 86_400.0), "3 d");
    }
}
